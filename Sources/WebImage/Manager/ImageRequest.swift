import Foundation
import WebImageCoders

/// What to load and how, as one value (Nuke's `ImageRequest`, Kingfisher's options in one place):
/// the URL, its priority, how to use the caches, the decoding and the transformations.
///
/// ```swift
/// var request = ImageRequest(url: url, priority: .high, transformers: [.resize(width: 200), .roundCorners(16)])
/// request.cachePolicy = .revalidate
/// let image = try await ImageManager.shared.loadImage(with: request).image
/// ```
///
/// A request maps onto the SDWebImage-shaped API: ``options`` and ``context`` are what
/// ``ImageManager/loadImage(with:options:context:progress:completed:)-(URL?,_,_,_,_)`` receives, with the
/// cache policy, priority, thumbnail and transformers folded in.
public struct ImageRequest: Sendable {
    /// How a load uses the caches.
    public enum CachePolicy: Sendable, Hashable {
        /// The cache when it has the image, else the network; the result is cached (default).
        case `default`
        /// The cached image first, then the server is asked whether it changed (`ETag`,
        /// `Last-Modified`); the final result is the changed image, or the cached one when the
        /// server says "not modified" (``ImageOptions/refreshCached``).
        case revalidate
        /// The cache only; a miss fails with ``WebImageError/Code/cacheMiss``
        /// (``ImageOptions/fromCacheOnly``).
        case cacheOnly
        /// The network only: the caches are not read, the result is stored
        /// (``ImageOptions/fromLoaderOnly``).
        case networkOnly
    }

    /// The image's URL: http, https or file (or one an additional loader handles).
    public var url: URL
    /// Where the download waits in the downloader's queue; ``ImageTask/priority`` changes it
    /// later. Default `.normal`.
    public var priority: ImagePriority
    /// How the load uses the caches. Default `.default`.
    public var cachePolicy: CachePolicy
    /// Further SDWebImage flags (``ImageOptions/decodeFirstFrameOnly``,
    /// ``ImageOptions/scaleDownLargeImages``, ``ImageOptions/progressiveLoad``…). The cache
    /// flags and priority flags here are overridden by ``cachePolicy`` and ``priority``.
    public var options: ImageOptions
    /// Decode to fit in this box, keeping the aspect ratio (cached under its own key). Default none.
    public var thumbnail: PixelSize?
    /// Applied in order to the decoded image before it is cached under its own key
    /// (`[.resize(width: 200), .roundCorners(16)]`). Default none.
    public var transformers: [any ImageTransformer]
    /// Anything the caller wants to carry with the request (not used by the library).
    public var userInfo: [String: any Sendable]
    /// Every other per-load setting (request modifier, coders, queues, memory budget); its
    /// thumbnail, transformer and priority are replaced by this request's.
    public var context: ImageContext

    /// A request for `url`; every other setting has the default documented on its property.
    // shape: public memberwise init: each parameter is a documented property with a default
    public init(
        url: URL,
        priority: ImagePriority = .normal,
        cachePolicy: CachePolicy = .default,
        options: ImageOptions = [],
        thumbnail: PixelSize? = nil,
        transformers: [any ImageTransformer] = [],
        userInfo: [String: any Sendable] = [:],
        context: ImageContext = ImageContext()
    ) {
        self.url = url
        self.priority = priority
        self.cachePolicy = cachePolicy
        self.options = options
        self.thumbnail = thumbnail
        self.transformers = transformers
        self.userInfo = userInfo
        self.context = context
    }

    /// The SDWebImage options this request loads with.
    public var resolvedOptions: ImageOptions {
        var resolved = options.subtracting([
            .refreshCached, .fromCacheOnly, .fromLoaderOnly, .highPriority, .lowPriority,
        ])
        resolved.formUnion(priority.options)
        switch cachePolicy {
        case .default: break
        case .revalidate: resolved.insert(.refreshCached)
        case .cacheOnly: resolved.insert(.fromCacheOnly)
        case .networkOnly: resolved.insert(.fromLoaderOnly)
        }
        return resolved
    }

    /// The context this request loads with: ``context`` with the priority, thumbnail and
    /// transformers set.
    public var resolvedContext: ImageContext {
        var resolved = context
        resolved.priority = priority
        resolved.thumbnailPixelSize = thumbnail
        switch transformers.count {
        case 0: resolved.transformer = nil
        case 1: resolved.transformer = transformers[0]
        default: resolved.transformer = PipelineTransformer(transformers)
        }
        return resolved
    }
}
