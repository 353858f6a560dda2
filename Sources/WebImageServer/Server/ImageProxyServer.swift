import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization
import UnixSignals
import WebImage

/// The image proxy on Hummingbird 2: `GET /health`, `GET /info/…` and `GET /{signature}/…`,
/// answered by an ``ImageProxy``, and optionally `GET /metrics` on a listener of its own. Start it
/// with ``start(proxy:host:port:metrics:gracePeriod:requestLog:)`` (tests, embedding), or run it until
/// SIGTERM/SIGINT with ``run(proxy:host:port:metrics:gracePeriod:requestLog:onListening:)``.
///
/// A client that closes its connection while its request is in flight cancels that request's
/// task (as nginx counts a 499), so work nobody else waits for stops.
public final class ImageProxyServer: Sendable {
    /// The ports a server listens on (the ones picked when 0 was asked for).
    public struct Listening: Sendable, Equatable {
        public var port: Int
        /// The `/metrics` listener's port, when one was asked for.
        public var metricsPort: Int?
    }

    /// The port it listens on (the one picked when 0 was asked for).
    public let port: Int
    /// The `/metrics` listener's port, when it has one.
    public let metricsPort: Int?
    public let host: String
    private let serviceGroup: ServiceGroup
    private let task: Task<Void, any Error>

    private init(host: String, listening: Listening, serviceGroup: ServiceGroup, task: Task<Void, any Error>) {
        self.host = host
        self.port = listening.port
        self.metricsPort = listening.metricsPort
        self.serviceGroup = serviceGroup
        self.task = task
    }

    /// `http://HOST:PORT`.
    public var baseURL: String { Self.url(host: host, port: port) }

    /// `http://HOST:PORT` for `host` (brackets around an IPv6 address).
    public static func url(host: String, port: Int) -> String {
        "http://\(host.contains(":") ? "[\(host)]" : host):\(port)"
    }

    /// Starts `proxy` listening on `host:port` (port 0: a free one), and `/metrics` on `metrics`
    /// when given, and returns once both accept connections; `requestLog` receives one entry
    /// per request. With a `gracePeriod`, ``stop()`` lets requests in flight finish within it
    /// (requests still waiting for a worker near its end are answered 503); without one (the
    /// default), it waits for them all.
    /// - Throws: ``ImageProxyServerError`` when an address cannot be listened on.
    public static func start(
        proxy: ImageProxy,
        host: String = "127.0.0.1",
        port: Int = 0,
        metrics: (host: String, port: Int)? = nil,
        gracePeriod: Duration? = nil,
        requestLog: (@Sendable (RequestLogEntry) -> Void)? = nil
    ) async throws -> ImageProxyServer {
        let (events, continuation) = AsyncStream.makeStream(of: Listening?.self)
        var services = makeServices(proxy: proxy, host: host, port: port, metrics: metrics, requestLog: requestLog) {
            continuation.yield($0)
            continuation.finish()
        }
        if let gracePeriod { services.append(ShutdownDrain(proxy: proxy, gracePeriod: gracePeriod)) }
        var configuration = ServiceGroupConfiguration(
            services: services.map { .init(service: $0) },
            logger: quietLogger
        )
        configuration.maximumGracefulShutdownDuration = gracePeriod
        let serviceGroup = ServiceGroup(configuration: configuration)
        let task = Task {
            // A listener that cannot bind ends the group before reporting: end the wait too.
            defer { continuation.finish() }
            try await serviceGroup.run()
        }
        var listening: Listening?
        for await event in events { listening = event }
        guard let listening else {
            await serviceGroup.triggerGracefulShutdown()
            _ = await task.result
            let where_ = metrics.map { "\(host):\(port) and \($0.host):\($0.port)" } ?? "\(host):\(port)"
            throw ImageProxyServerError(message: "cannot listen on \(where_)")
        }
        return ImageProxyServer(host: host, listening: listening, serviceGroup: serviceGroup, task: task)
    }

    /// Stops accepting, lets requests in flight finish, and returns when the server is down.
    public func stop() async {
        await serviceGroup.triggerGracefulShutdown()
        _ = await task.result
    }

    /// Runs until SIGTERM or SIGINT, then stops accepting and lets requests in flight finish
    /// within `gracePeriod`; requests still waiting for a worker near its end are answered 503
    /// with `Retry-After` and `Connection: close` instead of being dropped. `onListening` is called once every listener accepts connections.
    public static func run(
        proxy: ImageProxy,
        host: String,
        port: Int,
        metrics: (host: String, port: Int)? = nil,
        gracePeriod: Duration = .seconds(10),
        requestLog: (@Sendable (RequestLogEntry) -> Void)? = nil,
        onListening: @escaping @Sendable (Listening) -> Void
    ) async throws {
        var services = makeServices(proxy: proxy, host: host, port: port, metrics: metrics, requestLog: requestLog) {
            if let listening = $0 { onListening(listening) }
        }
        services.append(ShutdownDrain(proxy: proxy, gracePeriod: gracePeriod))
        var configuration = ServiceGroupConfiguration(
            services: services.map { .init(service: $0) },
            gracefulShutdownSignals: [.sigterm, .sigint],
            cancellationSignals: [],
            logger: quietLogger
        )
        configuration.maximumGracefulShutdownDuration = gracePeriod
        let serviceGroup = ServiceGroup(configuration: configuration)
        try await serviceGroup.run()
    }

    private static var quietLogger: Logger {
        var logger = Logger(label: "webimage.serve")
        logger.logLevel = .critical
        return logger
    }

    /// The proxy's application, and the metrics one when asked for. `onListening` gets the
    /// ports once every listener runs, or `nil` when one could not bind.
    private static func makeServices(
        proxy: ImageProxy,
        host: String,
        port: Int,
        metrics: (host: String, port: Int)?,
        requestLog: (@Sendable (RequestLogEntry) -> Void)?,
        onListening: @escaping @Sendable (Listening?) -> Void
    ) -> [any Service] {
        let ports = PortCollector(expected: metrics == nil ? 1 : 2, report: onListening)
        // Graceful shutdown goes from the last service to the first: the proxy stops accepting
        // and drains first, while the metrics listener still answers.
        var services: [any Service] = []
        if let interval = proxy.configuration.freeMemoryInterval, interval > .zero {
            services.append(FreeMemoryRelease(interval: interval, metrics: proxy.metrics))
        }
        let limits = proxy.configuration.connectionLimits
        // The metrics listener holds connections as the proxy does, with a cap of its own (a few
        // scrapers), so a slow client there cannot take the process's descriptors either.
        let metricsLimiter = ConnectionLimiter(maxConnections: min(64, limits.maxConnections))
        if let metrics {
            services.append(
                Application(
                    responder: MetricsResponder(metrics: proxy.metrics),
                    server: .http1(
                        configuration: .init(
                            additionalChannelHandlers: [
                                ConnectionGuard(
                                    limiter: metricsLimiter,
                                    readRequestTimeout: limits.readRequestTimeout,
                                    metrics: nil
                                )
                            ],
                            idleTimeout: TimeAmount(limits.keepAliveTimeout)
                        )
                    ),
                    configuration: .init(address: .hostname(metrics.host, port: metrics.port), serverName: nil),
                    onServerRunning: { channel in ports.record(metrics: channel.localAddress?.port) },
                    logger: quietLogger
                )
            )
        }
        // The originals cache trims itself on a timer (`makeManager`: every 10 minutes); one sweep
        // now, for a cache an earlier run left over its limits.
        proxy.manager.imageCache.removeExpired {}
        let limiter = ConnectionLimiter(maxConnections: limits.maxConnections)
        let metricsRecorder = proxy.metrics
        services.append(
            Application(
                responder: ProxyResponder(proxy: proxy, requestLog: requestLog),
                server: .http1(
                    configuration: .init(
                        additionalChannelHandlers: [
                            ClientCloseHandler(),
                            ConnectionGuard(
                                limiter: limiter,
                                readRequestTimeout: limits.readRequestTimeout,
                                metrics: metricsRecorder
                            ),
                        ],
                        idleTimeout: TimeAmount(limits.keepAliveTimeout)
                    )
                ),
                configuration: .init(address: .hostname(host, port: port), serverName: nil),
                onServerRunning: { channel in ports.record(proxy: channel.localAddress?.port) },
                logger: quietLogger
            )
        )
        return services
    }
}

/// Why the server could not start.
public struct ImageProxyServerError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}

/// One line of the request log.
public struct RequestLogEntry: Sendable {
    public var status: Int
    public var milliseconds: Double
    /// The source's host, when the URL got as far as naming one.
    public var sourceHost: String?
    /// The error code of a failed request.
    public var errorCode: String?
    /// The request path, at most 300 characters.
    public var path: String

    /// `200 12.3 ms images.example`: status, time, and the source host (or the path).
    public var text: String {
        "\(status) \(String(format: "%.1f", milliseconds)) ms \(sourceHost ?? path)"
            + (errorCode.map { " \($0)" } ?? "")
    }
}

/// Gathers the bound ports of the listeners and reports once all are known.
private final class PortCollector: Sendable {
    private struct State {
        var proxy: Int??
        var metrics: Int??
        var reported = false
    }

    private let expected: Int
    private let report: @Sendable (ImageProxyServer.Listening?) -> Void
    private let state = Mutex(State())

    init(expected: Int, report: @escaping @Sendable (ImageProxyServer.Listening?) -> Void) {
        self.expected = expected
        self.report = report
    }

    func record(proxy port: Int?) { update { $0.proxy = .some(port) } }
    func record(metrics port: Int?) { update { $0.metrics = .some(port) } }

    private func update(_ change: (inout State) -> Void) {
        let outcome = state.withLock { state -> ImageProxyServer.Listening?? in
            change(&state)
            guard !state.reported, let proxy = state.proxy, expected == 1 || state.metrics != nil else { return nil }
            state.reported = true
            guard let port = proxy, port > 0 else { return .some(nil) }
            if expected == 1 { return .some(ImageProxyServer.Listening(port: port)) }
            guard let metricsPort = state.metrics ?? nil, metricsPort > 0 else { return .some(nil) }
            return .some(ImageProxyServer.Listening(port: port, metricsPort: metricsPort))
        }
        if let outcome { report(outcome) }
    }
}

/// The last service of the group, so the first told of a graceful shutdown: it schedules the
/// proxy's drain shortly before the grace period ends (``drainLead(gracePeriod:)`` before),
/// then returns so the proxy's listener can stop. Requests still queued then get 503 instead of a
/// closed connection when the group cancels what is left.
private struct ShutdownDrain: Service {
    let proxy: ImageProxy
    let gracePeriod: Duration

    func run() async throws {
        do {
            try await gracefulShutdown()
        } catch {
            return  // cancelled without a graceful shutdown: nothing to drain
        }
        let delay = gracePeriod - Self.drainLead(gracePeriod: gracePeriod)
        // Not structured on purpose: the group waits for this service to end before it stops the
        // listener, and the drain must happen later, while requests are still in flight. A
        // dispatch timer, not a sleeping task: a task's sleep came back after the grace period
        // had run out on a loaded machine.
        _ = DispatchSource.oneShot(after: delay) { [proxy] in proxy.beginDraining() }
    }

    /// How long before the grace period ends the queue is answered 503: a quarter of it, at most
    /// 3 s. The answers need the cooperative pool and the event loop before the group cancels
    /// what is left; on a busy machine a lead of 1 s was not always enough.
    static func drainLead(gracePeriod: Duration) -> Duration {
        min(.seconds(3), gracePeriod / 4)
    }
}
