import Foundation

/// How an image load behaves: SDWebImageOptions under Swift names.
///
/// Flags that cannot mean anything on Linux are accepted and documented as no-ops.
public struct ImageOptions: OptionSet, Sendable, Hashable {
    /// The flags' bits.
    public let rawValue: UInt64
    /// Options from their bits.
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    /// Try a URL again even if it failed before (it is otherwise blacklisted).
    public static let retryFailed = ImageOptions(rawValue: 1 << 0)
    /// Waiting downloads with this flag start after the others.
    public static let lowPriority = ImageOptions(rawValue: 1 << 1)
    /// Cache in memory only, never on disk.
    public static let cacheMemoryOnly = ImageOptions(rawValue: 1 << 2)
    /// Deliver partial images while the data arrives.
    public static let progressiveLoad = ImageOptions(rawValue: 1 << 3)
    /// Deliver the cached image, then revalidate with the server (ETag/Last-Modified).
    public static let refreshCached = ImageOptions(rawValue: 1 << 4)
    /// Keep downloading when an app goes to the background. No-op on Linux.
    public static let continueInBackground = ImageOptions(rawValue: 1 << 5)
    /// Send and store cookies.
    public static let handleCookies = ImageOptions(rawValue: 1 << 6)
    /// Accept untrusted TLS certificates (testing only).
    public static let allowInvalidSSLCertificates = ImageOptions(rawValue: 1 << 7)
    /// Waiting downloads with this flag start first.
    public static let highPriority = ImageOptions(rawValue: 1 << 8)
    /// Show the placeholder only after the load fails. (For target bindings.)
    public static let delayPlaceholder = ImageOptions(rawValue: 1 << 9)
    /// Apply transformers to animated images too.
    public static let transformAnimatedImage = ImageOptions(rawValue: 1 << 10)
    /// Do not set the image on the target; the completion does it. (For target bindings.)
    public static let avoidAutoSetImage = ImageOptions(rawValue: 1 << 11)
    /// Decode large images scaled down (see the context's scale-down limit).
    public static let scaleDownLargeImages = ImageOptions(rawValue: 1 << 12)
    /// Only look in the caches; never use the network.
    public static let fromCacheOnly = ImageOptions(rawValue: 1 << 13)
    /// Only use the network; never look in the caches.
    public static let fromLoaderOnly = ImageOptions(rawValue: 1 << 14)
    /// Also read the image data when the memory cache hits.
    public static let queryMemoryData = ImageOptions(rawValue: 1 << 15)
    /// Decode only the first frame of animated images.
    public static let decodeFirstFrameOnly = ImageOptions(rawValue: 1 << 16)
    /// Deliver the data without decoding it.
    public static let avoidDecodeImage = ImageOptions(rawValue: 1 << 17)
    /// Ignore the HTTP response's cache: data equal to the cached data ends as `cacheNotModified`.
    public static let ignoreCachedResponse = ImageOptions(rawValue: 1 << 18)
    /// Finish a load only after its disk write (SDWebImage's `waitStoreCache`): the completion
    /// then means "on disk", and a failed write ends the load with `cacheStoreFailed`.
    /// ``ImagePrefetcher`` always sets it.
    public static let waitStoreCache = ImageOptions(rawValue: 1 << 19)
    /// For ``ImageTarget``'s `setImage`: when the target is already loading this URL under the
    /// same operation key, keep that load instead of cancelling and restarting it (AFNetworking's
    /// image view rule): no new request, no placeholder shown again; the call returns the running
    /// operation and its `completed` runs once, with the running load's final result (its
    /// `progress` handler and partial images are not called). Off by default, as in SDWebImage.
    public static let reuseRunningLoad = ImageOptions(rawValue: 1 << 20)
    /// Let the downloader's session use its response cache (`HTTPSession.Configuration.urlCache`,
    /// ``ImageDownloader/Configuration-swift.struct/urlCache``) by HTTP's rules, as SDWebImage's
    /// `UseNSURLCache`: without it, downloads neither read nor fill that cache.
    public static let useURLCache = ImageOptions(rawValue: 1 << 21)
    /// Decode an animation's frames when they are asked for (SDWebImage's `SDAnimatedImage`
    /// class in the context): the image holds its first frame and the
    /// `DecodedImage.animation` the others come from, so the memory cache
    /// counts that frame and the encoded bytes, and a player (``AnimatedImagePlayer``) buffers
    /// what it shows. Such an image in memory serves only loads with this option, and a whole
    /// animation only loads without it (the other kind decodes again from disk, as SDWebImage
    /// matches the animated image class). Ignored with a transformer, a
    /// ``ImageManager/Configuration/transformDownloadedImage`` hook or ``decodeFirstFrameOnly``.
    public static let decodeFramesOnDemand = ImageOptions(rawValue: 1 << 22)
}
