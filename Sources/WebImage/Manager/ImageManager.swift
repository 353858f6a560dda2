import Foundation
import Logging
import Synchronization
@_spi(WebImageInternals) import WebImageCoders
import WebImageHTTP

/// Joins the cache and the downloader behind one call (SDWebImageManager).
///
/// A load looks in the cache (memory, then disk), and when the image is missing (or
/// `refreshCached` asks to revalidate) downloads it once however many callers want it,
/// transforms it, stores it, and delivers it. URLs that failed for good are remembered for a
/// while (the failed-URL blacklist, ``Configuration/failedURLPolicy``) and fail at once with
/// `blackListed`, naming the first failure, until that time is up or `retryFailed` is passed.
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
/// **Threads.** Completions run on ``Configuration/callbackQueue`` when it is set; by default (`nil`) they run
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

    private let settings: Protected<Configuration>
    let failed: FailedURLList
    let running = Protected<Set<ImageLoadOperation>>([])
    /// The load tasks in flight, one per ``ResultLoad/Key``.
    let tasks = Protected<[ResultLoad.Key: ResultLoad]>([:])
    /// Keys whose stale entry is being revalidated in the background (`stale-while-revalidate`).
    let revalidating = Protected<Set<String>>([])
    /// Numbers for loads that share with no other (``ResultLoad/Key/unshareable``).
    let loadNumbers = Atomic<UInt64>(0)

    /// A manager over `cache` and `loader`; `additionalLoaders` are asked first, so they may take
    /// over any URL (a custom scheme, say). `configuration` holds the hooks (default: none).
    public init(
        cache: any ImageCaching,
        loader: ImageDownloader,
        additionalLoaders: [any ImageLoading] = [],
        configuration: Configuration = Configuration()
    ) {
        settings = Protected(configuration)
        failed = FailedURLList(policy: configuration.failedURLPolicy, now: configuration.now)
        imageCache = cache
        imageLoader = loader
        loaders =
            additionalLoaders + [
                loader, FileImageLoader(maximumFileSize: loader.configuration.maximumDownloadSize),
                DataURLLoader(maximumSize: loader.configuration.maximumDownloadSize),
            ]
    }

    /// The first loader that can request `url`.
    public func loader(for url: URL) -> (any ImageLoading)? { loaders.first { $0.canRequestImage(for: url) } }

    /// The hooks and settings the manager was made with (a snapshot; the deprecated setters below
    /// still change them).
    public var configuration: Configuration { settings.withLock { $0 } }

    // MARK: Hooks (deprecated: set them in Configuration)

    /// ``Configuration/cacheKeyFilter``.
    @available(*, deprecated, message: "set ImageManager.Configuration.cacheKeyFilter at init")
    public var cacheKeyFilter: (@Sendable (URL) -> String)? {
        get { configuration.cacheKeyFilter }
        set { settings.withLock { $0.cacheKeyFilter = newValue } }
    }

    /// ``Configuration/cacheSerializer``.
    @available(*, deprecated, message: "set ImageManager.Configuration.cacheSerializer at init")
    public var cacheSerializer: (@Sendable (DecodedImage, Data?, URL) -> Data?)? {
        get { configuration.cacheSerializer }
        set { settings.withLock { $0.cacheSerializer = newValue } }
    }

    /// ``Configuration/shouldDownloadImage``.
    @available(*, deprecated, message: "set ImageManager.Configuration.shouldDownloadImage at init")
    public var shouldDownloadImage: (@Sendable (URL) -> Bool)? {
        get { configuration.shouldDownloadImage }
        set { settings.withLock { $0.shouldDownloadImage = newValue } }
    }

    /// ``Configuration/transformDownloadedImage``.
    @available(*, deprecated, message: "set ImageManager.Configuration.transformDownloadedImage at init")
    public var transformDownloadedImage: (@Sendable (DecodedImage, URL) -> DecodedImage?)? {
        get { configuration.transformDownloadedImage }
        set { settings.withLock { $0.transformDownloadedImage = newValue } }
    }

    /// ``Configuration/callbackQueue``.
    @available(*, deprecated, message: "set ImageManager.Configuration.callbackQueue at init")
    public var callbackQueue: DispatchQueue? {
        get { configuration.callbackQueue }
        set { settings.withLock { $0.callbackQueue = newValue } }
    }

    /// ``Configuration/logger``.
    @available(*, deprecated, message: "set ImageManager.Configuration.logger at init")
    public var logger: Logger {
        get { configuration.logger }
        set { settings.withLock { $0.logger = newValue } }
    }

    // MARK: Keys and state

    /// The cache key for `url`: the context's ``ImageContext/cacheKeyFilter``, the manager's
    /// ``Configuration/cacheKeyFilter`` or the absolute URL, then the thumbnail size,
    /// a colour policy other than the default and the transformers' keys when the context has
    /// them (``ImageCacheKey/rawValue``).
    public func cacheKey(for url: URL?, context: ImageContext? = nil) -> String {
        guard let url else { return "" }
        return imageCacheKey(for: url, context: context).rawValue
    }

    /// The typed cache key for `url` with `context`'s thumbnail, colour policy and transformer.
    public func imageCacheKey(for url: URL, context: ImageContext? = nil) -> ImageCacheKey {
        imageCacheKey(for: url, context: context, settings: configuration)
    }

    /// ``imageCacheKey(for:context:)`` with the manager's settings already read.
    func imageCacheKey(for url: URL, context: ImageContext?, settings: Configuration) -> ImageCacheKey {
        ImageCacheKey(
            source: (context?.cacheKeyFilter ?? settings.cacheKeyFilter)?(url) ?? url.absoluteString,
            thumbnail: context?.thumbnailPixelSize,
            colorPolicy: context?.colorPolicy ?? .convertToSRGB,
            transformerKeys: context?.transformer.map(ImageCacheKey.keys(of:)) ?? []
        )
    }

    /// URLs that failed for good and fail at once until their time is up or they are loaded with
    /// `retryFailed`.
    public var failedURLs: Set<URL> { Set(failed.all.map(\.url)) }

    /// Every remembered failure with its cause and expiry, oldest first (then by URL).
    public var failures: [FailedURL] {
        failed.all.sorted { ($0.failedAt, $0.url.absoluteString) < ($1.failedAt, $1.url.absoluteString) }
    }

    /// Why `url` is remembered as failed, and until when; `nil` when it is not (or no longer).
    public func failure(for url: URL) -> FailedURL? { failed.failure(of: url) }

    /// Forgets that `url` failed.
    public func removeFailedURL(_ url: URL) { failed.remove(url) }

    /// Forgets every failure.
    public func removeAllFailedURLs() { failed.removeAll() }

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
            case .refreshFailed(let cached, let error): completed(nil, nil, error, .none, true, cached.url)
            case .notModified, .info: break
            }
        }
    }

    /// Waits until the cache's pending disk writes are done; a command-line tool or service calls
    /// it before the process exits.
    public func flush() async { await imageCache.flush() }
}
