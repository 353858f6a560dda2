import Foundation
import WebImageCoders

/// What makes two downloads one network load: loads whose keys are equal share one operation
/// and one request, so everything that changes the request or the result is in the key.
struct ImageDownloadKey: Hashable, Sendable {
    /// The absolute URL.
    var url: String
    /// What the decoder is asked for (thumbnail, scale-down limit, first frame only).
    var thumbnail: PixelSize?
    var scaleDownLimitBytes: Int?
    var firstFrameOnly: Bool
    /// `avoidDecodeImage`: the bytes without an image.
    var undecoded: Bool
    /// `allowInvalidSSLCertificates`: the load runs on the permissive session.
    var allowsInvalidCertificates: Bool
    /// `handleCookies`: the request sends and stores cookies.
    var handlesCookies: Bool
    /// With `refreshCached`, the validators the request sends: a conditional request never
    /// shares with an unconditional one, nor with one for another version.
    var etag: String?
    var lastModified: String?
    var isConditional: Bool
    /// With `ignoreCachedResponse`, the cached bytes an identical response is compared with.
    var comparedData: Data?
    /// Set for loads whose request a request modifier may change: no other load has it.
    var unshareable: UInt64?

    /// The key of a load of `url` with these options and context; `unshareable` is a number no
    /// other load gets, used when the context has a request modifier.
    init(url: URL, options: ImageOptions, context: ImageContext, unshareable: UInt64) {
        let decoding = context.decodingOptions(for: options)
        self.url = url.absoluteString
        thumbnail = decoding.thumbnailPixelSize
        scaleDownLimitBytes = decoding.scaleDownLimitBytes
        firstFrameOnly = decoding.firstFrameOnly
        undecoded = options.contains(.avoidDecodeImage)
        allowsInvalidCertificates = options.contains(.allowInvalidSSLCertificates)
        handlesCookies = options.contains(.handleCookies)
        let cached = context.cachedResponse
        isConditional = options.contains(.refreshCached) && cached != nil
        etag = isConditional ? cached?.etag : nil
        lastModified = isConditional ? cached?.lastModified : nil
        comparedData = options.contains(.ignoreCachedResponse) ? cached?.data : nil
        self.unshareable = context.requestModifier == nil ? nil : unshareable
    }
}

/// What makes two ``ImageManager`` loads one load task: loads whose keys are equal share the
/// cache query, the loader's load, the transform and the store, so everything that changes any
/// of them is in the key. Loads that differ only in priority share (the task keeps the first
/// caller's priority); `refreshCached` loads and loads with a request modifier never share.
struct ImageLoadKey: Hashable, Sendable {
    /// The cache key (``ImageManager/cacheKey(for:context:)``: filter or URL, thumbnail,
    /// transformer) and the URL asked for, which a cache key filter may have shortened.
    var cacheKey: String
    var url: String
    /// The options, without the priorities.
    var options: ImageOptions
    var scaleDownLimitBytes: Int
    var storeCacheType: ImageCacheType
    /// The context's coders, budget and queues, when not the shared ones.
    var coders: ObjectIdentifier?
    var budget: ObjectIdentifier?
    var decodeQueue: ObjectIdentifier?
    var transformQueue: ObjectIdentifier?
    /// A cached copy the caller passed in (its validators and bytes change the request).
    var cachedResponse: ImageContext.CachedResponse?
    /// Set for loads no other load may join: a number no other load gets.
    var unshareable: UInt64?

    /// The key of a load of `url` under `cacheKey`; `unshareable` is a number no other load
    /// gets, used for `refreshCached` and for a context with a request modifier.
    init(cacheKey: String, url: URL, options: ImageOptions, context: ImageContext, unshareable: UInt64) {
        self.cacheKey = cacheKey
        self.url = url.absoluteString
        self.options = options.subtracting([.lowPriority, .highPriority])
        scaleDownLimitBytes = context.scaleDownLimitBytes
        storeCacheType = context.storeCacheType
        coders = context.coders.map(ObjectIdentifier.init)
        budget = context.decodingMemoryBudget.map(ObjectIdentifier.init)
        decodeQueue = context.decodeQueue.map(ObjectIdentifier.init)
        transformQueue = context.transformQueue.map(ObjectIdentifier.init)
        cachedResponse = context.cachedResponse
        let shareable = context.requestModifier == nil && !options.contains(.refreshCached)
        self.unshareable = shareable ? nil : unshareable
    }
}
