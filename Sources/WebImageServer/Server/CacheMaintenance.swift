import ServiceLifecycle
import WebImage

/// Keeps the originals' disk cache within its age and size limits while the server runs: a
/// sweep at start, then one every `interval`, until graceful shutdown. A long-running proxy
/// writes new originals all day; without this the folder only grows.
struct CacheMaintenance: Service {
    let cache: ImageCache
    let interval: Duration

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                _ = await cache.deleteOldFiles()
                try? await Task.sleep(for: interval)
            }
        }
    }
}
