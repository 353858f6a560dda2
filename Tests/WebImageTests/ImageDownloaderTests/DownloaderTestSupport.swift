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
