import Foundation
import WebImageCoders

/// The key an image is cached under: the source (a ``ImageManager/cacheKeyFilter``'s answer, or
/// the absolute URL), and for a derived image the thumbnail size, the colour policy when it is
/// not the default, and the transformers' keys.
///
/// ``rawValue`` is the string the caches store it under. An original's raw value is its source
/// unchanged (so `ImageCache.shared.imageFromMemoryCache(forKey: url.absoluteString)` finds what
/// the manager loaded, as in SDWebImage). A derived key's raw value is a versioned form whose
/// fields are length-prefixed, so no source or transformer key, whatever characters it holds,
/// can make two different keys serialize alike:
///
///     \u{1}webimage-key:1|<source bytes>|<source>|thumbnail=<W>x<H>|color=<policy>|transform=<bytes>|<key>...
public struct ImageCacheKey: Hashable, Sendable, CustomStringConvertible {
    /// The original's key: the cache key filter's answer, or the absolute URL.
    public var source: String
    /// The thumbnail's pixel size, for a thumbnail.
    public var thumbnail: PixelSize?
    /// What the decode does with an embedded colour profile; images decoded with another policy
    /// than the default (`ColorPolicy.convertToSRGB`) are derived images.
    public var colorPolicy: ColorPolicy
    /// The transformers' keys, in the order they run (a ``PipelineTransformer`` gives one each).
    public var transformerKeys: [String]

    /// A key; without a thumbnail, a colour policy other than the default or transformers it
    /// names the original.
    public init(
        source: String,
        thumbnail: PixelSize? = nil,
        colorPolicy: ColorPolicy = .convertToSRGB,
        transformerKeys: [String] = []
    ) {
        self.source = source
        self.thumbnail = thumbnail
        self.colorPolicy = colorPolicy
        self.transformerKeys = transformerKeys
    }

    /// The key `transformer` adds: one per transformer of a pipeline, in order.
    static func keys(of transformer: any ImageTransformer) -> [String] {
        if let pipeline = transformer as? PipelineTransformer { return pipeline.transformers.flatMap(keys(of:)) }
        return [transformer.transformerKey]
    }

    /// Whether this names a thumbnail or a transformed image rather than the original.
    public var isDerived: Bool { thumbnail != nil || colorPolicy != .convertToSRGB || !transformerKeys.isEmpty }

    /// The original this key derives from (itself when it is the original).
    public var original: ImageCacheKey { ImageCacheKey(source: source) }

    /// The start of every versioned raw value. A URL's text never holds a control character.
    static let versionedPrefix = "\u{1}webimage-key:1|"

    /// The string the caches store the image under (see the type's description).
    public var rawValue: String {
        guard isDerived || source.hasPrefix("\u{1}webimage-key:") else { return source }
        var text = Self.versionedPrefix + "\(source.utf8.count)|" + source
        if let thumbnail { text += "|thumbnail=\(thumbnail.width)x\(thumbnail.height)" }
        if colorPolicy != .convertToSRGB { text += "|color=\(colorPolicy.rawValue)" }
        for key in transformerKeys { text += "|transform=\(key.utf8.count)|" + key }
        return text
    }

    /// Parses a raw value; `nil` for a versioned form this version cannot read. Any other string
    /// is the key of an original with that source.
    public init?(rawValue: String) {
        guard rawValue.hasPrefix("\u{1}webimage-key:") else {
            self.init(source: rawValue)
            return
        }
        guard rawValue.hasPrefix(Self.versionedPrefix) else { return nil }
        var reader = FieldReader(bytes: Array(rawValue.utf8.dropFirst(Self.versionedPrefix.utf8.count)))
        guard let source = reader.lengthPrefixed() else { return nil }
        var thumbnail: PixelSize?
        if reader.skip("|thumbnail=") {
            guard let width = reader.number(), reader.skip("x"), let height = reader.number() else { return nil }
            thumbnail = PixelSize(width: width, height: height)
        }
        var colorPolicy = ColorPolicy.convertToSRGB
        if reader.skip("|color=") {
            guard let policy = ColorPolicy.allCases.first(where: { reader.skip($0.rawValue) }) else { return nil }
            colorPolicy = policy
        }
        var transformerKeys: [String] = []
        while reader.skip("|transform=") {
            guard let key = reader.lengthPrefixed() else { return nil }
            transformerKeys.append(key)
        }
        guard reader.isAtEnd else { return nil }
        self.init(source: source, thumbnail: thumbnail, colorPolicy: colorPolicy, transformerKeys: transformerKeys)
    }

    public var description: String { rawValue.replacingOccurrences(of: "\u{1}", with: "\\u{1}") }

    /// Reads a versioned raw value's fields from its UTF-8 bytes.
    private struct FieldReader {
        let bytes: [UInt8]
        var position = 0

        var isAtEnd: Bool { position == bytes.count }

        /// Skips `literal` when it comes next.
        mutating func skip(_ literal: String) -> Bool {
            let expected = Array(literal.utf8)
            guard bytes.count - position >= expected.count,
                bytes[position..<position + expected.count].elementsEqual(expected)
            else { return false }
            position += expected.count
            return true
        }

        /// A decimal number of at most 18 digits.
        mutating func number() -> Int? {
            var value = 0
            var digits = 0
            while position < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]), digits < 18
            {
                value = value * 10 + Int(bytes[position] - UInt8(ascii: "0"))
                position += 1
                digits += 1
            }
            return digits > 0 ? value : nil
        }

        /// `<count>|` then `count` bytes of UTF-8.
        mutating func lengthPrefixed() -> String? {
            guard let count = number(), skip("|"), bytes.count - position >= count else { return nil }
            let field = bytes[position..<position + count]
            position += count
            return String(validating: field, as: UTF8.self)
        }
    }
}

/// What makes two downloads one network load: loads whose keys are equal share one operation
/// and one request, so everything that changes what goes on the wire is in the key, and
/// nothing else. What each caller wants its bytes decoded into is its ``ImageDecodeRequest``:
/// one request serves any number of thumbnail sizes, colour policies and undecoded callers.
struct ImageDownloadKey: Hashable, Sendable {
    /// The absolute URL.
    var url: String
    /// `allowInvalidSSLCertificates`: the load runs on the permissive session.
    var allowsInvalidCertificates: Bool
    /// `handleCookies`: the request sends and stores cookies.
    var handlesCookies: Bool
    /// `useURLCache`: the session's response cache may answer, and keeps the response.
    var usesURLCache: Bool
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
    /// other load gets, used when the context changes its download (``ImageContext/changesItsDownload``).
    init(url: URL, options: ImageOptions, context: ImageContext, unshareable: UInt64) {
        self.url = url.absoluteString
        allowsInvalidCertificates = options.contains(.allowInvalidSSLCertificates)
        handlesCookies = options.contains(.handleCookies)
        usesURLCache = options.contains(.useURLCache)
        let cached = context.cachedResponse
        isConditional = options.contains(.refreshCached) && cached != nil
        etag = isConditional ? cached?.etag : nil
        lastModified = isConditional ? cached?.lastModified : nil
        comparedData = options.contains(.ignoreCachedResponse) ? cached?.data : nil
        self.unshareable = context.changesItsDownload ? unshareable : nil
    }

    /// The URL and the unshareable number only: keys of one URL seldom differ in the rest, which
    /// equality still compares (hashing every field hashed the validators and bytes too).
    func hash(into hasher: inout Hasher) {
        hasher.combine(url)
        hasher.combine(unshareable)
    }
}

/// What one caller of a download wants the bytes decoded into, and with what: callers of one
/// download whose ``key``s are equal share one decode. A class: each caller's handler carries it
/// through the download's bookkeeping, where a copy is one reference, not every field of a context.
final class ImageDecodeRequest: Sendable {
    /// Everything that changes the decoded image (or whether there is one).
    struct Key: Hashable, Sendable {
        var thumbnail: PixelSize?
        var scaleDownLimitBytes: Int?
        var firstFrameOnly: Bool
        var framesOnDemand: Bool
        var colorPolicy: ColorPolicy
        var maxDecodeDuration: Duration?
        /// `avoidDecodeImage`: the bytes without an image.
        var undecoded: Bool
        /// The context's coders, budget and queue, when not the shared ones.
        var coders: ObjectIdentifier?
        var budget: ObjectIdentifier?
        var queue: ObjectIdentifier?
    }

    let key: Key
    /// The caller's options (its priority orders the decode) and context (coders, queue, budget).
    let options: ImageOptions
    let context: ImageContext

    init(options: ImageOptions, context: ImageContext) {
        let decoding = context.decodingOptions(for: options)
        key = Key(
            thumbnail: decoding.thumbnailPixelSize,
            scaleDownLimitBytes: decoding.scaleDownLimitBytes,
            firstFrameOnly: decoding.firstFrameOnly,
            framesOnDemand: decoding.framesOnDemand,
            colorPolicy: decoding.colorPolicy,
            maxDecodeDuration: decoding.maxDecodeDuration,
            undecoded: options.contains(.avoidDecodeImage),
            coders: context.coders.map(ObjectIdentifier.init),
            budget: context.decodingMemoryBudget.map(ObjectIdentifier.init),
            queue: context.decodeQueue.map(ObjectIdentifier.init)
        )
        self.options = options
        self.context = context
    }
}
