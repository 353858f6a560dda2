import ServiceLifecycle
import WebImage

/// Hands freed heap memory back to the kernel every `interval` in which requests were answered
/// (``ImageProxyConfiguration/freeMemoryInterval``, imgproxy's `IMGPROXY_FREE_MEMORY_INTERVAL`).
///
/// The server tunes malloc to keep freed bitmaps for the next request; after a burst of large
/// images that memory stays resident however quiet the server gets. A release after the burst
/// gives it back; an idle server is not woken for nothing (no answers since the last release:
/// nothing to do). The release blocks while it walks malloc's arenas, so it runs on a thread of
/// its own, never on the cooperative pool; one at a time.
struct FreeMemoryRelease: Service {
    let interval: Duration
    let metrics: ProxyMetrics

    func run() async throws {
        let queue = ImageWorkQueue(width: 1, name: "free-memory")
        await cancelWhenGracefulShutdown {
            var answeredAtLastRelease = 0
            while (try? await Task.sleep(for: interval)) != nil {
                let answered = metrics.answeredRequests
                guard answered != answeredAtLastRelease, queue.runningCount + queue.waitingCount == 0 else { continue }
                answeredAtLastRelease = answered
                _ = queue.enqueue { [metrics] in
                    let before = SystemMemory.residentBytes
                    SystemMemory.releaseFreeMemory()
                    let after = SystemMemory.residentBytes
                    metrics.releasedFreeMemory(residentBytesTaken: (before ?? 0) - (after ?? before ?? 0))
                }
            }
        }
    }
}
