import Foundation

/// An ordered list of coders (SDWebImage's `SDImageCodersManager`). For any data, the first
/// coder that claims it decodes it; coders added later come first, so a user's coder wins for
/// the formats it claims.
///
/// Thread-safe: coders may be added and removed while other threads decode.
public final class ImageCodersManager: Sendable {
    /// The process-wide manager with the built-in coders (``builtInCoders``).
    public static let shared = ImageCodersManager()

    private let storage: Protected<[any ImageCoding]>

    /// A manager holding `coders`, highest priority first (default: the built-in coders).
    public init(coders: [any ImageCoding] = ImageCodersManager.builtInCoders) {
        storage = Protected(coders)
    }

    /// The built-in coders: JPEG, PNG (with APNG), GIF, WebP, AVIF (each also encodes), HEIC/HEIF
    /// (decoding only), JPEG XL (both ways), then BMP, ICO and TIFF (both ways).
    public static var builtInCoders: [any ImageCoding] {
        [
            JPEGCoder(), PNGCoder(), GIFCoder(), WebPCoder(), AVIFCoder(), HEIFCoder(), JXLCoder(), BMPCoder(),
            ICOCoder(), TIFFCoder(),
        ]
    }

    /// The coders, highest priority first.
    public var coders: [any ImageCoding] { storage.withLock { $0 } }

    /// Adds `coder` in front of every other coder.
    public func addCoder(_ coder: any ImageCoding) {
        storage.withLock { $0.insert(coder, at: 0) }
    }

    /// Removes every coder of `coder`'s type.
    public func removeCoder(ofType type: any ImageCoding.Type) {
        storage.withLock { coders in coders.removeAll { Swift.type(of: $0) == type } }
    }

    /// The formats some coder here decodes, WebP first (the smallest of them), then PNG, JPEG,
    /// GIF and the rest in ``ImageFormat`` order.
    public var decodableFormats: [ImageFormat] {
        let preferred: [ImageFormat] = [.webp, .png, .jpeg, .gif]
        let order = preferred + ImageFormat.allCases.filter { !preferred.contains($0) && $0 != .unknown }
        return order.filter { decoder(for: ImageFormatDetails(format: $0)) != nil }
    }

    /// An HTTP `Accept` value naming exactly the media types of ``decodableFormats``
    /// (`image/webp,image/png,image/jpeg,image/gif,image/heic,image/heif,image/avif,image/tiff,`
    /// `image/bmp,image/vnd.microsoft.icon,image/jxl` with the built-in coders): a server that
    /// negotiates never sends a format nothing here can decode.
    public var acceptHeaderValue: String { decodableFormats.map(\.mimeType).joined(separator: ",") }

    /// The first decoder that accepts data with these details.
    public func decoder(for details: ImageFormatDetails) -> (any ImageCoding)? {
        coders.first { $0.canDecode(details) }
    }

    /// The first encoder for `format`.
    public func encoder(for format: ImageFormat) -> (any ImageCoding)? {
        coders.first { $0.canEncode(format) }
    }

    /// Sniffs and decodes `data` with the first coder that claims it.
    /// - Throws: ``CoderError/emptyData``, ``CoderError/unsupportedFormat(_:)``, or the coder's error.
    public func decode(
        _ data: Data,
        options: ImageDecodingOptions = ImageDecodingOptions()
    ) throws(CoderError)
        -> DecodedImage
    {
        guard !data.isEmpty else { throw .emptyData }
        let details = ImageFormatDetails(sniffing: data)
        guard let decoder = decoder(for: details) else { throw .unsupportedFormat(details.format) }
        return try decoder.decode(data, options: options)
    }

    /// An incremental decoder for data whose first bytes are `prefix`, or `nil` when no progressive
    /// coder claims it (yet: a few more bytes may be needed to sniff the format).
    public func makeIncrementalDecoder(
        forPrefix prefix: Data,
        options: ImageDecodingOptions = ImageDecodingOptions()
    )
        -> (any IncrementalImageDecoding)?
    {
        let details = ImageFormatDetails(sniffing: prefix)
        guard let decoder = decoder(for: details) as? any ProgressiveImageDecoding else { return nil }
        return decoder.makeIncrementalDecoder(options: options)
    }

    /// Encodes `image` as `format` with the first coder that writes it. An animation decoded on
    /// demand (``DecodedImage/animation``) goes to WebP, GIF, APNG or AVIF a frame at a time
    /// (``AnimatedImage/encode(as:options:frameLimit:transform:)``), holding one frame's
    /// canvases and the encoder's state (the options' time limit then covers decoding the
    /// frames too); other writers get every frame decoded first, as a whole decode gives them.
    public func encode(
        _ image: DecodedImage,
        as format: ImageFormat,
        options: ImageEncodingOptions = ImageEncodingOptions()
    ) throws(CoderError) -> Data {
        var image = image
        if let animation = image.animation, !options.firstFrameOnly {
            if AnimationEncoder.formats.contains(format) { return try animation.encode(as: format, options: options) }
            image = try animation.decodedImage(transformingEachFrame: { $0 }) ?? image
        }
        guard let encoder = encoder(for: format) else {
            throw .encodingFailed(format, "no encoder for \(format.rawValue)")
        }
        return try encoder.encode(image, as: format, options: options)
    }
}
