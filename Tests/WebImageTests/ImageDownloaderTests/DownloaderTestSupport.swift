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

    /// Waits (bounded) until `condition` holds. The bound is generous: decodes share the
    /// process-wide decode queue with every suite running beside them (the proxy's renders too),
    /// and CI may share its two cores; a wait that ends early costs nothing.
    static func wait(_ condition: @Sendable () -> Bool, timeout: Duration = .seconds(40)) async {
        await waitUntil(condition, timeout: timeout)
    }
}
