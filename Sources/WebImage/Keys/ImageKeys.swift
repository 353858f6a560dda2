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
