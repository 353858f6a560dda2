import CoreMetrics
import Prometheus
import Synchronization

/// The proxy's measurements, recorded through swift-metrics into a Prometheus registry of its
/// own (so several proxies in one process keep theirs apart) and served as Prometheus text on
/// `--metrics-bind`. Thread-safe.
///
/// - `webimage_requests_total{status}`: answers by HTTP status.
/// - `webimage_stage_duration_seconds{stage}`: histograms for `queue`, `fetch`, `decode`,
///   `transform` and `encode`.
/// - `webimage_queue_depth`, `webimage_requests_in_flight`: gauges, as of the last change.
/// - `webimage_cache_hits_total{tier}`: sources found in the `memory` or `disk` cache;
///   `webimage_source_fetches_total`: sources fetched from their origin.
/// - `webimage_decoded_source_lookups_total{result}`: renders that found their decode kept in
///   memory (`hit`) or decoded (`miss`); `webimage_decoded_source_cache_bytes`: what it holds.
/// - `webimage_coalesced_requests_total`: requests answered by work another request started.
/// - `webimage_geometry_computations_total`: result geometries computed: one per render
///   planned on a source whose header gives its orientation, one more per other orientation
///   the header leaves open, and one more when a trim changes the size.
/// - `webimage_source_bytes_total`, `webimage_result_bytes_total`.
/// - `webimage_connections_open`: client connections counted against `--max-connections`;
///   `webimage_connections_closed_total{reason}`: connections the server closed, by reason
///   (`read_timeout`, `evicted` at the cap for a new one, `refused` at the cap with none idle).
/// - `webimage_memory_releases_total`: times freed heap memory was handed back to the kernel
///   (``ImageProxyConfiguration/freeMemoryInterval``); `webimage_memory_released_bytes_total`:
///   the resident memory those releases took away.
public final class ProxyMetrics: Sendable {
    /// Why the server closed a client connection.
    public enum ConnectionCloseReason: String, Sendable, CaseIterable {
        case readTimeout = "read_timeout"
        case evicted
        case refused
    }

    /// A stage of a request's work, timed separately.
    public enum Stage: String, Sendable, CaseIterable {
        case queue, fetch, decode, transform, encode
    }

    /// The registry the measurements land in.
    public let registry: PrometheusCollectorRegistry
    private let factory: PrometheusMetricsFactory
    private let queueDepth: CoreMetrics.Gauge
    private let inFlight: CoreMetrics.Gauge
    private let coalesced: CoreMetrics.Counter
    private let sourceFetches: CoreMetrics.Counter
    private let sourceBytes: CoreMetrics.Counter
    private let resultBytes: CoreMetrics.Counter
    private let decodedSourceHits: CoreMetrics.Counter
    private let decodedSourceMisses: CoreMetrics.Counter
    private let decodedSourceBytes: CoreMetrics.Gauge
    private let openConnections: CoreMetrics.Gauge
    private let geometryComputations: CoreMetrics.Counter
    private let memoryReleases: CoreMetrics.Counter
    private let memoryReleasedBytes: CoreMetrics.Counter
    private let answers = Atomic<Int>(0)

    /// Measurements into `registry` (a new one by default).
    public init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) {
        self.registry = registry
        factory = PrometheusMetricsFactory(registry: registry)
        queueDepth = CoreMetrics.Gauge(label: "webimage_queue_depth", factory: factory)
        inFlight = CoreMetrics.Gauge(label: "webimage_requests_in_flight", factory: factory)
        coalesced = CoreMetrics.Counter(label: "webimage_coalesced_requests_total", factory: factory)
        sourceFetches = CoreMetrics.Counter(label: "webimage_source_fetches_total", factory: factory)
        sourceBytes = CoreMetrics.Counter(label: "webimage_source_bytes_total", factory: factory)
        resultBytes = CoreMetrics.Counter(label: "webimage_result_bytes_total", factory: factory)
        let lookups = "webimage_decoded_source_lookups_total"
        decodedSourceHits = CoreMetrics.Counter(label: lookups, dimensions: [("result", "hit")], factory: factory)
        decodedSourceMisses = CoreMetrics.Counter(label: lookups, dimensions: [("result", "miss")], factory: factory)
        decodedSourceBytes = CoreMetrics.Gauge(label: "webimage_decoded_source_cache_bytes", factory: factory)
        openConnections = CoreMetrics.Gauge(label: "webimage_connections_open", factory: factory)
        geometryComputations = CoreMetrics.Counter(label: "webimage_geometry_computations_total", factory: factory)
        memoryReleases = CoreMetrics.Counter(label: "webimage_memory_releases_total", factory: factory)
        memoryReleasedBytes = CoreMetrics.Counter(label: "webimage_memory_released_bytes_total", factory: factory)
        // Present from the start, so a scrape before the first request sees every series.
        queueDepth.record(0)
        inFlight.record(0)
        decodedSourceBytes.record(0)
        openConnections.record(0)
        for reason in ConnectionCloseReason.allCases { _ = closedConnections(reason) }
        for stage in Stage.allCases { _ = timer(stage) }
        for tier in ["memory", "disk"] { _ = cacheHits(tier) }
    }

    /// The Prometheus text exposition of everything recorded.
    public func exposition() -> String { registry.emitToString() }

    /// Requests answered so far, whatever their status.
    var answeredRequests: Int { answers.load(ordering: .relaxed) }

    func answered(status: Int) {
        answers.add(1, ordering: .relaxed)
        CoreMetrics.Counter(
            label: "webimage_requests_total",
            dimensions: [("status", String(status))],
            factory: factory
        )
        .increment()
    }

    func record(_ stage: Stage, _ duration: Duration) {
        timer(stage).recordNanoseconds(
            duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000
        )
    }

    func gate(_ load: AdmissionGate.Load) {
        queueDepth.record(load.waiting)
        inFlight.record(load.working)
    }

    func joinedOtherWork() { coalesced.increment() }

    func computedGeometry(count: Int) {
        geometryComputations.increment(by: count)
    }

    func loadedSource(bytes: Int, from cacheType: ImageCacheTier) {
        sourceBytes.increment(by: bytes)
        switch cacheType {
        case .network: sourceFetches.increment()
        case .memory: cacheHits("memory").increment()
        case .disk: cacheHits("disk").increment()
        }
    }

    func releasedFreeMemory(residentBytesTaken bytes: Int) {
        memoryReleases.increment()
        memoryReleasedBytes.increment(by: max(0, bytes))
    }

    func sentResult(bytes: Int) { resultBytes.increment(by: bytes) }

    func lookedUpDecodedSource(found: Bool) { (found ? decodedSourceHits : decodedSourceMisses).increment() }

    func decodedSourceCacheBytes(_ bytes: Int) { decodedSourceBytes.record(bytes) }

    func connectionsOpen(_ count: Int) { openConnections.record(count) }

    func closedConnection(_ reason: ConnectionCloseReason) { closedConnections(reason).increment() }

    private func closedConnections(_ reason: ConnectionCloseReason) -> CoreMetrics.Counter {
        CoreMetrics.Counter(
            label: "webimage_connections_closed_total",
            dimensions: [("reason", reason.rawValue)],
            factory: factory
        )
    }

    private func timer(_ stage: Stage) -> CoreMetrics.Timer {
        CoreMetrics.Timer(
            label: "webimage_stage_duration_seconds",
            dimensions: [("stage", stage.rawValue)],
            factory: factory
        )
    }

    private func cacheHits(_ tier: String) -> CoreMetrics.Counter {
        CoreMetrics.Counter(label: "webimage_cache_hits_total", dimensions: [("tier", tier)], factory: factory)
    }
}

/// Where a source's bytes came from.
enum ImageCacheTier {
    case network, memory, disk
}
