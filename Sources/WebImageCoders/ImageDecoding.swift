import Foundation

/// Decodes image data of the formats it claims (SDWebImage's `SDImageCoder`, decoding half).
///
/// Implementations are `Sendable` and stateless; `decode` may run on any thread, concurrently.
public protocol ImageDecoding: Sendable {
    /// Whether this decoder takes data sniffed as `format` (with its header details).
    func canDecode(_ details: ImageFormatDetails) -> Bool
    /// Decodes complete data. Truncated data is an error here (see ``ProgressiveImageDecoding``).
    func decode(_ data: Data, options: ImageDecodingOptions) throws(CoderError) -> DecodedImage
}

/// A decoder that can also show an image while its data is still arriving.
public protocol ProgressiveImageDecoding: ImageDecoding {
    /// A fresh incremental decoder for one image.
    func makeIncrementalDecoder(options: ImageDecodingOptions) -> any IncrementalImageDecoding
}

/// Decodes one image from data that grows (SDWebImage's `SDProgressiveImageCoder`).
///
/// Not thread-safe: one owner feeds it, in order. Each call passes *all* the bytes received so
/// far (each call's data starts with the previous call's).
public protocol IncrementalImageDecoding: AnyObject {
    /// Takes the data received so far. Returns a new partial image (``DecodedImage/isPartial``)
    /// when more of the image can be shown than last time, else `nil`. With `isComplete` it
    /// returns the final image — equal to a one-shot ``ImageDecoding/decode(_:options:)`` — or
    /// throws what that would throw.
    func update(_ data: Data, isComplete: Bool) throws(CoderError) -> DecodedImage?
}

/// How to encode.
public struct ImageEncodingOptions: Sendable, Hashable {
    /// Lossy quality from 0 to 1 (JPEG, lossy WebP). Default 0.9.
    public var quality: Double
    /// Lossless WebP. Default `false`.
    public var lossless: Bool
    /// Progressive JPEG. Default `false`.
    public var progressive: Bool
    /// Encode only the first frame of an animation. Default `false`.
    public var firstFrameOnly: Bool
    /// How long encoding may take before it fails with `limitExceeded`: checked between rows for
    /// JPEG and PNG, in libwebp's progress callback, between frames elsewhere. `nil`: no limit.
    /// Default 10 seconds, as ``ImageDecodingOptions/maxDecodeDuration``.
    public var maxEncodeDuration: Duration?
    /// Stops the encode at its next check when cancelled: between rows for JPEG and PNG, in
    /// libwebp's progress callback, between frames elsewhere (it then throws `limitExceeded`).
    /// Default `nil`.
    public var cancellation: CodingCancellation?
    /// AVIF's encoder speed, 0 (slowest, smallest) to 10 (fastest); `nil` (default): the
    /// ``AVIFCoder``'s own ``AVIFCoder/speed``.
    public var avifSpeed: Int?
    /// The AV1 encoder libavif uses (``AVIFEncoderChoice``); `nil` (default): the
    /// ``AVIFCoder``'s own ``AVIFCoder/encoder``.
    public var avifEncoder: AVIFEncoderChoice?
    /// JPEG XL's encoder effort, 1 (fastest) to 9 (smallest); `nil` (default): the
    /// ``JXLCoder``'s own ``JXLCoder/effort``.
    public var jxlEffort: Int?

    public init(
        quality: Double = 0.9,
        lossless: Bool = false,
        progressive: Bool = false,
        firstFrameOnly: Bool = false,
        maxEncodeDuration: Duration? = .seconds(10)
    ) {
        self.quality = quality
        self.lossless = lossless
        self.progressive = progressive
        self.firstFrameOnly = firstFrameOnly
        self.maxEncodeDuration = maxEncodeDuration
    }
}

/// Encodes images into the formats it claims (SDWebImage's `SDImageCoder`, encoding half).
public protocol ImageEncoding: Sendable {
    /// Whether this encoder writes `format`.
    func canEncode(_ format: ImageFormat) -> Bool
    /// Encodes `image` as `format`. Animated images keep their frames where the format can.
    func encode(
        _ image: DecodedImage,
        as format: ImageFormat,
        options: ImageEncodingOptions
    ) throws(CoderError)
        -> Data
}

/// A coder that both decodes and encodes.
public typealias ImageCoding = ImageDecoding & ImageEncoding
