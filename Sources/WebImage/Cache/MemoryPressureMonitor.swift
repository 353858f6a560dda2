import Foundation
@_spi(WebImageInternals) import WebImageCoders

/// Watches this process's cgroup memory use and, while it is above a threshold of the cgroup's
/// limit, asks the memory caches it watches to purge to their watermark
/// (``MemoryCache/purgeToWatermark()``), before the kernel's OOM killer acts. Linux has no
/// memory-warning notification for ordinary processes, so it polls (one small file read per
/// interval).
///
/// A process without a cgroup memory limit has no pressure to see: ``shared`` then never polls.
/// Caches are held weakly. Every method may be called from any thread; the purges run on the
/// monitor's queue with no lock of the monitor held.
public final class MemoryPressureMonitor: Sendable {
    /// The memory whose use is watched.
    public let memory: SystemMemory
    /// The fraction of the cgroup's limit above which caches are purged. Default 0.9.
    public let threshold: Double
    /// Time between checks. Default 2 seconds.
    public let interval: Duration

    private struct WeakCache {
        weak var cache: MemoryCache?
    }

    private struct State {
        var caches: [WeakCache] = []
        var poller: Task<Void, Never>?
        var purges = 0
    }

    private let state = Protected(State())
    private let queue = DispatchQueue(label: "swift-web-image.MemoryPressureMonitor")

    /// A monitor of `memory`'s cgroup; nothing is polled until a cache is watched.
    public init(memory: SystemMemory = .current, threshold: Double = 0.9, interval: Duration = .seconds(2)) {
        self.memory = memory
        self.threshold = threshold
        self.interval = interval
    }

    /// The monitor every ``ImageCache`` registers its memory cache with.
    public static let shared = MemoryPressureMonitor()

    /// How many purges of the watched caches have finished (for metrics and tests).
    public var purgeCount: Int { state.withLock { $0.purges } }

    /// Whether the monitor polls: from the first watched cache on, when the cgroup has a limit.
    public var isPolling: Bool { state.withLock { $0.poller != nil } }

    /// Watches `cache` (weakly) from now on. Starts polling with the first cache, when the cgroup
    /// has a limit.
    public func watch(_ cache: MemoryCache) {
        guard memory.cgroupLimit != nil else { return }
        state.withLock { state in
            state.caches.removeAll { $0.cache == nil }
            state.caches.append(WeakCache(cache: cache))
            guard state.poller == nil else { return }
            let (interval, queue) = (max(interval, .milliseconds(1)), queue)
            // The file reads and purges run on the monitor's queue, not the cooperative pool.
            state.poller = Task.detached(priority: .utility) { [weak self] in
                while !Task.isCancelled {
                    try? await Task.sleep(for: interval)
                    guard let self, !Task.isCancelled else { return }
                    queue.async { self.check() }
                }
            }
        }
    }

    /// Stops polling and forgets the watched caches.
    public func stop() {
        let poller = state.withLock { state in
            state.caches.removeAll()
            defer { state.poller = nil }
            return state.poller
        }
        poller?.cancel()
    }

    deinit {
        state.withLock { $0.poller }?.cancel()
    }

    /// One check: purges the watched caches when use is over the threshold.
    func check() {
        guard let fraction = memory.cgroupUsageFraction, fraction >= threshold else { return }
        let caches = state.withLock { state in
            state.caches.removeAll { $0.cache == nil }
            return state.caches.compactMap(\.cache)
        }
        for cache in caches { cache.purgeToWatermark() }
        state.withLock { $0.purges += 1 }
    }
}
