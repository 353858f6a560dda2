import Foundation
import Logging
import Synchronization
import WebImageCoders
import WebImageHTTP

/// Joins the cache and the downloader behind one call (SDWebImageManager).
///
/// A load looks in the cache (memory, then disk), and when the image is missing (or
/// `refreshCached` asks to revalidate) downloads it once however many callers want it,
/// transforms it, stores it, and delivers it. URLs that failed for good are remembered
/// (the failed-URL blacklist) and fail at once with `blackListed` until `retryFailed`.
///
/// **One task per key.** Concurrent loads with the same cache key and settings share one load
/// task: one cache query, one loader load, one transform and one store; each caller's
/// ``ImageLoadOperation`` cancels only its own interest, and the work stops when no caller
/// wants it. A load that starts as a task closes finds what it stored in the cache.
///
/// **Derived images.** A thumbnail (`ImageContext.thumbnailPixelSize`) or a transformer's output
/// is cached under its own key as its own bytes, and the original's bytes under the URL's key:
/// another size or transformation of a cached original is made from that entry with no download
/// and completes as a disk hit.
///
/// ```swift
/// let result = try await ImageManager.shared.loadImage(with: url)
/// let operation = ImageManager.shared.loadImage(with: url, progress: nil) { image, data, error, cacheType, finished, url in … }
/// operation.cancel()
/// ```
///
/// **Threads.** Completions run on ``callbackQueue`` when it is set; by default (`nil`) they run
/// directly on the thread that produced the result: the caller's thread for a memory hit the
/// cache answers synchronously (``ImageCaching/imageFromMemoryCache(forKey:)``) and for URLs
/// refused at once, a background thread otherwise, never an event loop. `async` APIs resume on
/// the caller's executor.
public final class ImageManager: Sendable {
    /// `(image, data, error, cacheType, finished, url)`. `finished == false` carries a
    /// progressive preview. Exactly one call has `finished == true`, except with `refreshCached`
    /// where a cached image and then a changed one may both arrive finished.
    public typealias CompletedHandler =
        @Sendable (DecodedImage?, Data?, WebImageError?, ImageCacheType, Bool, URL?) -> Void
    /// `(receivedBytes, expectedBytes, url)`.
    public typealias ProgressHandler = ImageDownloader.ProgressHandler

    /// The process-wide manager: ``ImageCache/shared`` and ``ImageDownloader/shared``.
    public static let shared = ImageManager(cache: ImageCache.shared, loader: .shared)

    /// Where images are looked up and stored.
    public let imageCache: any ImageCaching
    /// Where missing http and https images are downloaded.
    public let imageLoader: ImageDownloader
    /// Every loader, asked in order whether it can request a URL: the additional loaders given
    /// at init, then ``imageLoader``, then a ``FileImageLoader`` for `file://` (with the
    /// downloader's size limit).
    public let loaders: [any ImageLoading]

    private struct Hooks: Sendable {
        var cacheKeyFilter: (@Sendable (URL) -> String)?
        var cacheSerializer: (@Sendable (DecodedImage, Data?, URL) -> Data?)?
        var shouldDownloadImage: (@Sendable (URL) -> Bool)?
        var transformDownloadedImage: (@Sendable (DecodedImage, URL) -> DecodedImage?)?
        var callbackQueue: DispatchQueue?
        var logger = Logger.quiet("swift-web-image.manager")
    }

    private let hooks = Protected(Hooks())
    let failed = Protected<Set<URL>>([])
    let running = Protected<Set<ImageLoadOperation>>([])
    /// The load tasks in flight, one per ``ImageLoadKey``.
    let tasks = Protected<[ImageLoadKey: ImageLoadTask]>([:])
    /// Numbers for loads that share with no other (``ImageLoadKey/unshareable``).
    let loadNumbers = Atomic<UInt64>(0)

    /// A manager over `cache` and `loader`; `additionalLoaders` are asked first, so they may take
    /// over any URL (a custom scheme, say).
    public init(cache: any ImageCaching, loader: ImageDownloader, additionalLoaders: [any ImageLoading] = []) {
        imageCache = cache
        imageLoader = loader
        loaders =
            additionalLoaders + [loader, FileImageLoader(maximumFileSize: loader.configuration.maximumDownloadSize)]
    }

    /// The first loader that can request `url`.
    public func loader(for url: URL) -> (any ImageLoading)? { loaders.first { $0.canRequestImage(for: url) } }

    // MARK: Hooks

    /// Maps a URL to its cache key (SDWebImageCacheKeyFilter). Default: the absolute URL.
    public var cacheKeyFilter: (@Sendable (URL) -> String)? {
        get { hooks.withLock { $0.cacheKeyFilter } }
        set { hooks.withLock { $0.cacheKeyFilter = newValue } }
    }

    /// The bytes stored on disk for a transformed image `(image, originalData, url)`; `nil`
    /// stores the image re-encoded with our encoders (the default).
    public var cacheSerializer: (@Sendable (DecodedImage, Data?, URL) -> Data?)? {
        get { hooks.withLock { $0.cacheSerializer } }
        set { hooks.withLock { $0.cacheSerializer = newValue } }
    }

    /// Whether to download a URL missing from the cache (the delegate's
    /// `shouldDownloadImageForURL:`). A `false` ends the load with `cacheMiss`.
    public var shouldDownloadImage: (@Sendable (URL) -> Bool)? {
        get { hooks.withLock { $0.shouldDownloadImage } }
        set { hooks.withLock { $0.shouldDownloadImage = newValue } }
    }

    /// Transforms each downloaded image before it is cached (the delegate's
    /// `transformDownloadedImage:`); animated images only with `transformAnimatedImage`.
    public var transformDownloadedImage: (@Sendable (DecodedImage, URL) -> DecodedImage?)? {
        get { hooks.withLock { $0.transformDownloadedImage } }
        set { hooks.withLock { $0.transformDownloadedImage = newValue } }
    }

    /// Where completions and progress run; `nil` (default) runs them on the producing thread.
    public var callbackQueue: DispatchQueue? {
        get { hooks.withLock { $0.callbackQueue } }
        set { hooks.withLock { $0.callbackQueue = newValue } }
    }

    /// Receives each load's outcome at `.debug` and blacklisted URLs at `.notice`. Default: none.
    public var logger: Logger {
        get { hooks.withLock { $0.logger } }
        set { hooks.withLock { $0.logger = newValue } }
    }

    // MARK: Keys and state

    /// The cache key for `url`: ``cacheKeyFilter`` or the absolute URL, then the thumbnail size
    /// and the transformers' keys when the context has them (``ImageCacheKey/rawValue``).
    public func cacheKey(for url: URL?, context: ImageContext? = nil) -> String {
        guard let url else { return "" }
        return imageCacheKey(for: url, context: context).rawValue
    }

    /// The typed cache key for `url` with `context`'s thumbnail and transformer.
    public func imageCacheKey(for url: URL, context: ImageContext? = nil) -> ImageCacheKey {
        ImageCacheKey(
            source: cacheKeyFilter?(url) ?? url.absoluteString,
            thumbnail: context?.thumbnailPixelSize,
            transformerKeys: context?.transformer.map(ImageCacheKey.keys(of:)) ?? []
        )
    }

    /// URLs that failed for good and fail at once until loaded with `retryFailed`.
    public var failedURLs: Set<URL> { failed.withLock { $0 } }

    /// Forgets that `url` failed.
    public func removeFailedURL(_ url: URL) { failed.withLock { _ = $0.remove(url) } }

    /// Forgets every failure.
    public func removeAllFailedURLs() { failed.withLock { $0.removeAll() } }

    /// Load tasks in flight (callers of one key share one).
    var loadTaskCount: Int { tasks.withLock { $0.count } }

    /// Whether any load is running.
    public var isRunning: Bool { running.withLock { !$0.isEmpty } }

    /// Cancels every running load; each caller gets `cancelled`.
    public func cancelAll() {
        for operation in running.withLock({ Array($0) }) { operation.cancel() }
    }

    /// Where `url`'s image is cached (`.none` when nowhere).
    public func cachedImageExists(for url: URL?, context: ImageContext? = nil) async -> ImageCacheType {
        guard url != nil else { return .none }
        return await imageCache.containsImage(forKey: cacheKey(for: url, context: context), cacheType: .all)
    }

    /// Whether `url`'s image is on disk.
    public func diskImageExists(for url: URL?, context: ImageContext? = nil) async -> Bool {
        guard url != nil else { return false }
        return await imageCache.containsImage(forKey: cacheKey(for: url, context: context), cacheType: .disk) == .disk
    }

    /// Stores `image` for `url` in memory and on disk (re-encoded).
    public func saveImageToCache(_ image: DecodedImage, for url: URL?, data: Data? = nil) async throws {
        guard let url else { return }
        try await imageCache.store(image, data: data, forKey: cacheKey(for: url), metadata: nil, cacheType: .all)
    }

    // MARK: Loading

    /// Loads `url` with `options`; see the type's documentation for the steps and threads.
    /// Returns the operation to cancel this caller's load.
    @discardableResult
    public func loadImage(
        with url: URL?,
        options: ImageOptions = [],
        context: ImageContext? = nil,
        progress: ProgressHandler? = nil,
        completed: @escaping CompletedHandler
    ) -> ImageLoadOperation {
        start(url: url, options: options, context: context ?? ImageContext()) { event in
            switch event {
            case .progress(let received, let expected, let url): progress?(received, expected, url)
            case .partial(let image, let url): completed(image, nil, nil, .none, false, url)
            case .image(let result, _): completed(result.image, result.data, nil, result.cacheType, true, result.url)
            case .failure(let error, let url): completed(nil, nil, error, .none, true, url)
            case .notModified: break
            }
        }
    }

    /// Waits until the cache's pending disk writes are done; a command-line tool or service calls
    /// it before the process exits.
    public func flush() async { await imageCache.flush() }
}
