import Foundation
import WebImageCoders
import WebImageHTTP

/// Per-load settings beyond ``ImageOptions`` (SDWebImageContext).
public struct ImageContext: Sendable {
    /// The settings, behind one immutable reference that copies share: a context travels by
    /// value through every stage of a load (manager, downloader, decode), and copying a dozen
    /// closures, existentials and class references each time retained and released every one of
    /// them. A setter gives this context a new box; other copies keep theirs.
    private var box: Box

    private final class Box: Sendable {
        let values: Values
        init(_ values: Values) { self.values = values }
    }

    /// The settings themselves, copied only when a setter changes a shared context.
    private struct Values: Sendable {
        var thumbnailPixelSize: PixelSize?
        var scaleDownLimitBytes: Int
        var priority: ImagePriority?
        var requestModifier: (@Sendable (HTTPSession.Request) -> HTTPSession.Request?)?
        var responseModifier: (@Sendable (HTTPSession.Response) -> HTTPSession.Response?)?
        var decryptor: (@Sendable (Data, HTTPSession.Response) -> Data?)?
        var cacheKeyFilter: (@Sendable (URL) -> String)?
        var colorPolicy: ColorPolicy = .convertToSRGB
        var coders: ImageCodersManager?
        var decodingMemoryBudget: DecodingMemoryBudget?
        var decodeQueue: ImageWorkQueue?
        var transformQueue: ImageWorkQueue?
        var transformer: (any ImageTransformer)?
        var storeCacheType: ImageCacheType = .all
        var imageInfoHandler: (@Sendable (ImageHeader, URL) -> Void)?
        var retryStrategy: (any ImageRetryStrategy)?
        var maxDecodeDuration: Duration? = .seconds(10)
        var cachedResponse: CachedResponse?
    }

    /// Changes the settings of this context only (a new box; other copies keep theirs).
    private mutating func update(_ change: (inout Values) -> Void) {
        var values = box.values
        change(&values)
        box = Box(values)
    }

    /// This context with the given queues and budget where it names none, changed at once (one
    /// new box at most): ``ImageManager`` fills every load's context with its own.
    func filling(
        decodeQueue: ImageWorkQueue?,
        transformQueue: ImageWorkQueue?,
        decodingMemoryBudget: DecodingMemoryBudget?
    ) -> ImageContext {
        let values = box.values
        let fillsDecodeQueue = values.decodeQueue == nil && decodeQueue != nil
        let fillsTransformQueue = values.transformQueue == nil && transformQueue != nil
        let fillsBudget = values.decodingMemoryBudget == nil && decodingMemoryBudget != nil
        guard fillsDecodeQueue || fillsTransformQueue || fillsBudget else { return self }
        var filled = self
        filled.update { values in
            if fillsDecodeQueue { values.decodeQueue = decodeQueue }
            if fillsTransformQueue { values.transformQueue = transformQueue }
            if fillsBudget { values.decodingMemoryBudget = decodingMemoryBudget }
        }
        return filled
    }

    /// Decode to fit in this box (keeps the aspect ratio; JPEG never allocates the full image).
    public var thumbnailPixelSize: PixelSize? {
        get { box.values.thumbnailPixelSize }
        set { update { $0.thumbnailPixelSize = newValue } }
    }
    /// With `scaleDownLargeImages`, the most bytes one decoded frame may take. Default 60 MB.
    public var scaleDownLimitBytes: Int {
        get { box.values.scaleDownLimitBytes }
        set { update { $0.scaleDownLimitBytes = newValue } }
    }
    /// Where the load waits in the downloader's queue; `nil` (default) takes it from the options
    /// (``ImageOptions/highPriority``, ``ImageOptions/lowPriority``).
    public var priority: ImagePriority? {
        get { box.values.priority }
        set { update { $0.priority = newValue } }
    }
    /// Changes the request before it is sent, or returns `nil` to cancel the load.
    public var requestModifier: (@Sendable (HTTPSession.Request) -> HTTPSession.Request?)? {
        get { box.values.requestModifier }
        set { update { $0.requestModifier = newValue } }
    }
    /// Changes this load's response before it is checked, or returns `nil` to fail the load with
    /// `invalidDownloadResponse` (SDWebImage's context `downloadResponseModifier`). Runs before
    /// the downloader's ``ImageDownloader/responseModifier``, on the download's task. A load with
    /// one shares its network load with no other. Default `nil`.
    public var responseModifier: (@Sendable (HTTPSession.Response) -> HTTPSession.Response?)? {
        get { box.values.responseModifier }
        set { update { $0.responseModifier = newValue } }
    }
    /// Turns this load's downloaded bytes into the image's bytes, or returns `nil` to fail it with
    /// `badImageData` (SDWebImage's context `downloadDecryptor`). Runs before the downloader's
    /// ``ImageDownloader/decryptor``; progressive decoding is off for the load. A load with one
    /// shares its network load with no other. Default `nil`.
    public var decryptor: (@Sendable (Data, HTTPSession.Response) -> Data?)? {
        get { box.values.decryptor }
        set { update { $0.decryptor = newValue } }
    }
    /// This load's cache key for its URL (SDWebImage's context `cacheKeyFilter`), in place of
    /// the manager's ``ImageManager/Configuration/cacheKeyFilter``; the thumbnail, colour policy
    /// and transformer are still added to it. Default `nil`: the manager's, else the URL.
    public var cacheKeyFilter: (@Sendable (URL) -> String)? {
        get { box.values.cacheKeyFilter }
        set { update { $0.cacheKeyFilter = newValue } }
    }
    /// What decodes do with an embedded colour profile (default: convert to sRGB). Another
    /// policy gives a derived image, cached under its own key.
    public var colorPolicy: ColorPolicy {
        get { box.values.colorPolicy }
        set { update { $0.colorPolicy = newValue } }
    }
    /// The coders to decode with (default: the shared registry).
    public var coders: ImageCodersManager? {
        get { box.values.coders }
        set { update { $0.coders = newValue } }
    }
    /// The budget decodes reserve their pixel memory from (default:
    /// ``DecodingMemoryBudget/shared``, one for the whole process).
    public var decodingMemoryBudget: DecodingMemoryBudget? {
        get { box.values.decodingMemoryBudget }
        set { update { $0.decodingMemoryBudget = newValue } }
    }
    /// The queue decodes run on (default: ``ImageWorkQueue/decoding``, one decode per core).
    public var decodeQueue: ImageWorkQueue? {
        get { box.values.decodeQueue }
        set { update { $0.decodeQueue = newValue } }
    }
    /// The queue ``ImageManager`` runs transforms on (default: ``ImageWorkQueue/transforming``,
    /// one transform per core).
    public var transformQueue: ImageWorkQueue? {
        get { box.values.transformQueue }
        set { update { $0.transformQueue = newValue } }
    }
    /// Transforms each downloaded image before it is cached; the cache key gains its key.
    public var transformer: (any ImageTransformer)? {
        get { box.values.transformer }
        set { update { $0.transformer = newValue } }
    }
    /// Where loaded images are stored (downloads by ``ImageManager``, disk hits promoted by
    /// ``ImageCache``). Default `.all`; `.disk` keeps disk hits out of memory, `.none` stores nothing.
    public var storeCacheType: ImageCacheType {
        get { box.values.storeCacheType }
        set { update { $0.storeCacheType = newValue } }
    }
    /// Called once, off the caller's stack, when a download's first bytes tell the image's
    /// format, size and frame count, before the body has arrived (Kingfisher #1003): a layout
    /// can be sized early. GIF and animated WebP count the frames seen so far. Default `nil`.
    public var imageInfoHandler: (@Sendable (ImageHeader, URL) -> Void)? {
        get { box.values.imageInfoHandler }
        set { update { $0.imageInfoHandler = newValue } }
    }
    /// This load's retry strategy, in place of the downloader's
    /// (``ImageDownloader/Configuration/retryStrategy``). A load with one shares its network
    /// load with no other. Default `nil`.
    public var retryStrategy: (any ImageRetryStrategy)? {
        get { box.values.retryStrategy }
        set { update { $0.retryStrategy = newValue } }
    }
    /// How long one decode of this load may take before it fails with `limitExceeded`
    /// (`ImageDecodingOptions.maxDecodeDuration`); `nil`: no limit. Default 10 seconds.
    public var maxDecodeDuration: Duration? {
        get { box.values.maxDecodeDuration }
        set { update { $0.maxDecodeDuration = newValue } }
    }
    /// The cached copy the caller already has (`refreshCached`): its validators make the request
    /// conditional, and with `ignoreCachedResponse` identical data ends as `cacheNotModified`.
    public var cachedResponse: CachedResponse? {
        get { box.values.cachedResponse }
        set { update { $0.cachedResponse = newValue } }
    }

    /// What the caller's cache knows about an image.
    public struct CachedResponse: Sendable, Hashable {
        /// The cached response's `ETag`, sent as `If-None-Match`.
        public var etag: String?
        /// The cached response's `Last-Modified`, sent as `If-Modified-Since`.
        public var lastModified: String?
        /// The cached bytes; with `ignoreCachedResponse`, identical new bytes end as `cacheNotModified`.
        public var data: Data?

        /// What the caller's cache knows; every part is optional.
        public init(etag: String? = nil, lastModified: String? = nil, data: Data? = nil) {
            self.etag = etag
            self.lastModified = lastModified
            self.data = data
        }
    }

    /// Per-load settings; every parameter has the default documented on its property.
    public init(
        thumbnailPixelSize: PixelSize? = nil,
        scaleDownLimitBytes: Int = 60 * 1024 * 1024,
        requestModifier: (@Sendable (HTTPSession.Request) -> HTTPSession.Request?)? = nil,
        coders: ImageCodersManager? = nil,
        cachedResponse: CachedResponse? = nil,
        transformer: (any ImageTransformer)? = nil
    ) {
        box = Box(
            Values(
                thumbnailPixelSize: thumbnailPixelSize,
                scaleDownLimitBytes: scaleDownLimitBytes,
                requestModifier: requestModifier,
                coders: coders,
                transformer: transformer,
                cachedResponse: cachedResponse
            )
        )
    }

    /// Whether the load has hooks of its own that change what it sends or receives (a request or
    /// response modifier, a decryptor, a retry strategy): such a load shares its download with
    /// no other.
    var changesItsDownload: Bool {
        requestModifier != nil || responseModifier != nil || decryptor != nil || retryStrategy != nil
    }

    /// The decoding options these settings and `options` ask for.
    func decodingOptions(for options: ImageOptions) -> ImageDecodingOptions {
        var decoding = ImageDecodingOptions(
            thumbnailPixelSize: thumbnailPixelSize,
            scaleDownLimitBytes: options.contains(.scaleDownLargeImages) ? scaleDownLimitBytes : nil,
            firstFrameOnly: options.contains(.decodeFirstFrameOnly),
            maxDecodeDuration: maxDecodeDuration,
            colorPolicy: colorPolicy
        )
        decoding.framesOnDemand = options.contains(.decodeFramesOnDemand) && !decoding.firstFrameOnly
        return decoding
    }
}
