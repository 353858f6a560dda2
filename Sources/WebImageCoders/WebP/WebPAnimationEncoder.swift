import CWebP
import Foundation

/// Writes an animated WebP with libwebp's `WebPAnimEncoder` (which finds each frame's changed
/// rectangle and picks blending itself), a frame at a time: the encoder keeps the previous
/// canvas and its candidate encodings, never every frame.
///
/// Owns the `WebPAnimEncoder` (freed in `deinit`); libwebp copies each picture's pixels, so a
/// frame's bitmap is free once ``add(_:)`` returns. Not thread-safe.
final class WebPAnimationWriter {
    private let encoder: OpaquePointer
    private var config: WebPConfig
    private let size: PixelSize
    private let deadline: CodingDeadline
    private var timestamp: Int32 = 0
    private var added = 0

    init(size: PixelSize, loopCount: Int, options: ImageEncodingOptions) throws(CoderError) {
        var encoderOptions = WebPAnimEncoderOptions()
        guard WebPAnimEncoderOptionsInit(&encoderOptions) != 0 else {
            throw .encodingFailed(.webp, "libwebp version mismatch")
        }
        encoderOptions.anim_params.loop_count = Int32(max(0, min(0xFFFF, loopCount)))
        config = try WebPEncoding.config(for: options)
        guard let encoder = WebPAnimEncoderNew(Int32(size.width), Int32(size.height), &encoderOptions) else {
            throw .encodingFailed(.webp, "cannot create an animation encoder for \(size.width)×\(size.height)")
        }
        self.encoder = encoder
        self.size = size
        deadline = CodingDeadline(options)
    }

    deinit { WebPAnimEncoderDelete(encoder) }

    /// Adds the next frame; its bitmap must have the animation's size.
    func add(_ frame: DecodedImage.Frame) throws(CoderError) {
        try deadline.check(.webp, "encoding")
        try frame.checkSize(size, number: added + 1, format: .webp)
        try WebPEncoding.withPicture(of: frame.bitmap) { (picture) throws(CoderError) in
            guard WebPAnimEncoderAdd(encoder, &picture, timestamp, &config) != 0 else {
                throw .encodingFailed(.webp, "cannot add frame \(added + 1): \(message)")
            }
        }
        added += 1
        timestamp += Int32((frame.duration * 1000).rounded())
    }

    /// The file, once every frame was added.
    func finish() throws(CoderError) -> Data {
        guard WebPAnimEncoderAdd(encoder, nil, timestamp, nil) != 0 else { throw .encodingFailed(.webp, message) }
        var output = WebPData()
        guard WebPAnimEncoderAssemble(encoder, &output) != 0, let bytes = output.bytes else {
            throw .encodingFailed(.webp, message)
        }
        defer { WebPDataClear(&output) }
        return Data(bytes: bytes, count: output.size)
    }

    private var message: String { WebPAnimEncoderGetError(encoder).map { String(cString: $0) } ?? "unknown error" }
}

/// Writes a whole ``DecodedImage`` as an animated WebP.
struct WebPAnimationEncoder {
    let image: DecodedImage
    let options: ImageEncodingOptions

    func encode() throws(CoderError) -> Data {
        let size = PixelSize(width: image.width, height: image.height)
        let writer = try WebPAnimationWriter(size: size, loopCount: image.loopCount, options: options)
        for frame in image.frames { try writer.add(frame) }
        return try writer.finish()
    }
}
