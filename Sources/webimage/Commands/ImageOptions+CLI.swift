import ArgumentParser
import Foundation
import WebImage

/// `--options`' names: the ``ImageOptions`` flags in kebab-case.
extension ImageOptions {
    /// Every flag with its CLI name.
    static let namedOptions: [(name: String, option: ImageOptions)] = [
        ("retry-failed", .retryFailed), ("low-priority", .lowPriority), ("cache-memory-only", .cacheMemoryOnly),
        ("progressive-load", .progressiveLoad), ("refresh-cached", .refreshCached),
        ("continue-in-background", .continueInBackground), ("handle-cookies", .handleCookies),
        ("allow-invalid-ssl-certificates", .allowInvalidSSLCertificates), ("high-priority", .highPriority),
        ("delay-placeholder", .delayPlaceholder), ("transform-animated-image", .transformAnimatedImage),
        ("avoid-auto-set-image", .avoidAutoSetImage), ("scale-down-large-images", .scaleDownLargeImages),
        ("from-cache-only", .fromCacheOnly), ("from-loader-only", .fromLoaderOnly),
        ("query-memory-data", .queryMemoryData), ("decode-first-frame-only", .decodeFirstFrameOnly),
        ("avoid-decode-image", .avoidDecodeImage), ("ignore-cached-response", .ignoreCachedResponse),
        ("wait-store-cache", .waitStoreCache), ("use-url-cache", .useURLCache),
        ("decode-frames-on-demand", .decodeFramesOnDemand),
    ]

    /// Parses comma-separated names (`retry-failed,refresh-cached`).
    /// - Throws: a usage error naming the first unknown option and listing the known ones.
    init(parsing text: String) throws(ValidationError) {
        var options: ImageOptions = []
        for name in text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !name.isEmpty {
            guard let match = Self.namedOptions.first(where: { $0.name == name }) else {
                throw ValidationError(
                    "unknown option '\(name)'; known: \(Self.namedOptions.map(\.name).joined(separator: ", "))"
                )
            }
            options.insert(match.option)
        }
        self = options
    }
}
