import Foundation
import WebImage
import WebImageCoders
import WebImageOrigin
import WebImageTestSupport

enum DownloaderFixtures {
    static let png: Data = {
        let bitmap = GeneratedImages.gradient(width: 32, height: 24)
        return try! PNGCoder().encode(DecodedImage(bitmap: bitmap, format: .png), as: .png, options: .init())
    }()

    /// A downloader with the default configuration but a two-minute idle timeout: tests hold
    /// responses at a gate while other callers join, and on a busy machine joining can take longer
    /// than the default 15 s (tests of the timeout configure their own).
    static func downloader() -> ImageDownloader {
        var configuration = ImageDownloader.Configuration()
        configuration.downloadTimeout = .seconds(120)
        return ImageDownloader(configuration: configuration)
    }

    static func route(_ data: Data = png, behavior: OriginRoute.Behavior = .init()) -> OriginRoute {
        .data(data, contentType: "image/png", behavior: behavior)
    }

    /// A progressive image dripped so that a preview is certain however busy the machine: its
    /// chunks go every 10 ms but the last, which waits for ``HeldTail/releaseTail()`` (call it on
    /// the first partial image) or 30 s (then the test's expectation fails, not its time limit).
    /// Load it with ``HeldTail/context``: a decode queue and budget of its own, so other suites'
    /// decodes can take neither the preview's turn nor its memory (previews are best effort).
    final class HeldTail: Sendable {
        let route: OriginRoute
        let context: ImageContext
        private let release = OriginChunkRelease()
        private let watchdog: Task<Void, Never>

        init(_ data: Data, contentType: String = "image/jpeg", chunkSize: Int = 1_000) {
            let chunks = (data.count + chunkSize - 1) / chunkSize
            // Every chunk after the first waits for a release: all but the last are let go now.
            for _ in 0..<max(0, chunks - 2) { release.release() }
            route = .data(
                data,
                contentType: contentType,
                behavior: .init(chunkSize: chunkSize, chunkInterval: .milliseconds(10), chunkRelease: release)
            )
            var context = ImageContext()
            context.decodeQueue = ImageWorkQueue(width: 1, name: "previews")
            context.decodingMemoryBudget = DecodingMemoryBudget(limit: 64 << 20)
            self.context = context
            let release = release
            watchdog = Task {
                try? await Task.sleep(for: .seconds(30))
                release.release()
            }
        }

        /// Lets the last chunk go (later calls change nothing).
        func releaseTail() { release.release() }

        deinit { watchdog.cancel() }
    }

    /// Waits (bounded) until `condition` holds. The bound is generous: decodes share the
    /// process-wide decode queue with every suite running beside them (the proxy's renders too),
    /// and CI may share its two cores; a wait that ends early costs nothing.
    static func wait(_ condition: @Sendable () -> Bool, timeout: Duration = .seconds(40)) async {
        await waitUntil(condition, timeout: timeout)
    }
}
