import CWebP
import Foundation

/// Writes an animated WebP with libwebp's `WebPAnimEncoder` (which finds each frame's changed
/// rectangle and picks blending itself).
struct WebPAnimationEncoder {
    let image: DecodedImage
    let options: ImageEncodingOptions

    func encode() throws(CoderError) -> Data {
        var encoderOptions = WebPAnimEncoderOptions()
        guard WebPAnimEncoderOptionsInit(&encoderOptions) != 0 else {
            throw .encodingFailed(.webp, "libwebp version mismatch")
        }
        encoderOptions.anim_params.loop_count = Int32(max(0, min(0xFFFF, image.loopCount)))
        guard let encoder = WebPAnimEncoderNew(Int32(image.width), Int32(image.height), &encoderOptions) else {
            throw .encodingFailed(.webp, "cannot create an animation encoder for \(image.width)×\(image.height)")
        }
        defer { WebPAnimEncoderDelete(encoder) }
        var config = try WebPEncoding.config(for: options)
        var timestamp: Int32 = 0
        let deadline = CodingDeadline(options)
        for (index, frame) in image.frames.enumerated() {
            try deadline.check(.webp, "encoding")
            try WebPEncoding.withPicture(of: frame.bitmap) { (picture) throws(CoderError) in
                guard WebPAnimEncoderAdd(encoder, &picture, timestamp, &config) != 0 else {
                    throw .encodingFailed(.webp, "cannot add frame \(index + 1): \(Self.message(encoder))")
                }
            }
            timestamp += Int32((frame.duration * 1000).rounded())
        }
        guard WebPAnimEncoderAdd(encoder, nil, timestamp, nil) != 0 else {
            throw .encodingFailed(.webp, Self.message(encoder))
        }
        var output = WebPData()
        guard WebPAnimEncoderAssemble(encoder, &output) != 0, let bytes = output.bytes else {
            throw .encodingFailed(.webp, Self.message(encoder))
        }
        defer { WebPDataClear(&output) }
        return Data(bytes: bytes, count: output.size)
    }

    private static func message(_ encoder: OpaquePointer) -> String {
        WebPAnimEncoderGetError(encoder).map { String(cString: $0) } ?? "unknown error"
    }
}
