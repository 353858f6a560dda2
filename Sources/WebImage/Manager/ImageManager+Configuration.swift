import Foundation
import Logging
import WebImageCoders

extension ImageManager {
    /// A manager's hooks and settings, given at init (SDWebImageManager's properties and
    /// `SDWebImageManagerDelegate`, as one value).
    ///
    /// ```swift
    /// var configuration = ImageManager.Configuration()
    /// configuration.cacheKeyFilter = { url in url.path }  // one entry whatever the query string
    /// let manager = ImageManager(cache: .shared, loader: .shared, configuration: configuration)
    /// ```
    ///
    /// The closures are called from the manager's threads (never with one of its locks held)
    /// and must be thread-safe.
    public struct Configuration: Sendable {
        /// Maps a URL to its cache key (SDWebImageCacheKeyFilter). Default `nil`: the absolute URL.
        public var cacheKeyFilter: (@Sendable (URL) -> String)?
        /// The bytes stored on disk for a transformed image `(image, originalData, url)`; `nil`
        /// (default) stores the image re-encoded with our encoders.
        public var cacheSerializer: (@Sendable (DecodedImage, Data?, URL) -> Data?)?
        /// Whether to download a URL missing from the cache; `false` ends the load with
        /// ``WebImageError/Code/cacheMiss``. Default `nil`: ask the ``delegate``, else yes.
        public var shouldDownloadImage: (@Sendable (URL) -> Bool)?
        /// Transforms each downloaded image before it is cached (animated images only with
        /// ``ImageOptions/transformAnimatedImage``). Default `nil`: ask the ``delegate``, else none.
        public var transformDownloadedImage: (@Sendable (DecodedImage, URL) -> DecodedImage?)?
        /// Whether a loaded image is kept in the cache at all (AFImageDownloader's and
        /// AFAutoPurgingImageCache's `shouldCacheImage`); `false` delivers it and stores nothing,
        /// in memory or on disk. Default `nil`: every image is cached as the options say.
        public var shouldCacheImage: (@Sendable (DecodedImage, URL) -> Bool)?
        /// Where completions and progress run; `nil` (default) runs them on the producing thread.
        public var callbackQueue: DispatchQueue?
        /// Receives each load's outcome at `.debug` and blacklisted URLs at `.notice`. Default: none.
        public var logger = Logger.quiet("swift-web-image.manager")
        /// Asked what the closures above do not answer; held weakly. Default `nil`.
        public weak var delegate: (any ImageManagerDelegate)?
        /// Where this manager's loads decode (downloads, files, disk hits) when their
        /// ``ImageContext`` names no queue. Default `nil`: ``ImageWorkQueue/decoding``, one
        /// decode per core, shared by the process.
        public var decodeQueue: ImageWorkQueue?
        /// Where this manager's transforms run when the context names no queue. Default `nil`:
        /// ``ImageWorkQueue/transforming``.
        public var transformQueue: ImageWorkQueue?
        /// The budget this manager's decodes reserve pixel memory from when the context names
        /// none. Default `nil`: ``DecodingMemoryBudget/shared``.
        public var decodingMemoryBudget: DecodingMemoryBudget?
        /// How long failed URLs are remembered, by cause. Default: 404/410 an hour, undecodable
        /// data a day, other blocked failures an hour.
        public var failedURLPolicy = FailedURLPolicy()
        /// The clock the failed-URL list reads (a test moves it). Default: the system's.
        public var now: @Sendable () -> Date = { Date() }

        /// No hooks, no callback queue, no logging.
        public init() {}

        /// `context` with this configuration's queues and budget where it names none.
        func filling(_ context: ImageContext) -> ImageContext {
            context.filling(
                decodeQueue: decodeQueue,
                transformQueue: transformQueue,
                decodingMemoryBudget: decodingMemoryBudget
            )
        }

        /// Whether a transform hook is set (closure or delegate).
        var transformsDownloads: Bool { transformDownloadedImage != nil || delegate != nil }

        func transformDownloaded(_ image: DecodedImage, url: URL, manager: ImageManager) -> DecodedImage? {
            if let transformDownloadedImage { return transformDownloadedImage(image, url) }
            return delegate?.imageManager(manager, transformDownloadedImage: image, for: url)
        }

        func shouldDownload(_ url: URL, manager: ImageManager) -> Bool {
            if let shouldDownloadImage { return shouldDownloadImage(url) }
            return delegate?.imageManager(manager, shouldDownloadImageFor: url) ?? true
        }

        func shouldBlock(_ url: URL, error: WebImageError, loader: any ImageLoading, manager: ImageManager) -> Bool {
            delegate?.imageManager(manager, shouldBlockFailedURL: url, error: error)
                ?? loader.shouldBlockFailedURL(url, error: error)
        }
    }
}

/// What an ``ImageManager`` asks its owner (SDWebImageManagerDelegate); every method has a
/// default. Called from the manager's threads, never with one of its locks held.
public protocol ImageManagerDelegate: AnyObject, Sendable {
    /// Whether to download `url`, missing from the cache. Default `true`.
    func imageManager(_ manager: ImageManager, shouldDownloadImageFor url: URL) -> Bool
    /// Whether to remember `url` as failed after `error`; `nil` (default) lets the loader decide.
    func imageManager(_ manager: ImageManager, shouldBlockFailedURL url: URL, error: WebImageError) -> Bool?
    /// The image to cache and deliver instead of `image`; `nil` (default) keeps it.
    func imageManager(
        _ manager: ImageManager,
        transformDownloadedImage image: DecodedImage,
        for url: URL
    ) -> DecodedImage?
}

extension ImageManagerDelegate {
    public func imageManager(_ manager: ImageManager, shouldDownloadImageFor url: URL) -> Bool { true }
    public func imageManager(_ manager: ImageManager, shouldBlockFailedURL url: URL, error: WebImageError) -> Bool? {
        nil
    }
    public func imageManager(
        _ manager: ImageManager,
        transformDownloadedImage image: DecodedImage,
        for url: URL
    ) -> DecodedImage? { nil }
}
