import CGIF
import Foundation

/// Writes a GIF89a: one full-canvas image per frame, each with its own palette, cleared before
/// the next frame when the animation has transparency; a NETSCAPE loop extension for animations.
struct GIFWriter {
    let image: DecodedImage
    let options: ImageEncodingOptions

    /// Collects giflib's output through `UserData`.
    final class Sink {
        var data = Data()
    }

    func encode() throws(CoderError) -> Data {
        let sink = Sink()
        var errorCode: Int32 = 0
        guard let gif = EGifOpen(Unmanaged.passUnretained(sink).toOpaque(), gifWrite, &errorCode) else {
            throw Self.failure(errorCode)
        }
        var closed = false
        defer { if !closed { EGifCloseFile(gif, &errorCode) } }
        EGifSetGifVersion(gif, true)
        let frames = options.firstFrameOnly ? Array(image.frames.prefix(1)) : image.frames
        let width = image.width
        let height = image.height
        guard width <= 0xFFFF, height <= 0xFFFF else {
            throw .encodingFailed(.gif, "\(width)×\(height) is larger than GIF's 65535×65535")
        }
        guard EGifPutScreenDesc(gif, Int32(width), Int32(height), 8, 0, nil) == GIF_OK else {
            throw Self.failure(gif.pointee.Error)
        }
        if frames.count > 1 {
            // Plays = repeats + 1; 0 (forever) stays 0.
            let repeats = image.loopCount == 0 ? 0 : min(0xFFFF, image.loopCount - 1)
            let ok = "NETSCAPE2.0".utf8CString.withUnsafeBufferPointer { name in
                EGifPutExtensionLeader(gif, APPLICATION_EXT_FUNC_CODE) == GIF_OK
                    && EGifPutExtensionBlock(gif, 11, name.baseAddress) == GIF_OK
            }
            var loopBlock: [UInt8] = [1, UInt8(repeats & 0xFF), UInt8(repeats >> 8)]
            guard ok, EGifPutExtensionBlock(gif, 3, &loopBlock) == GIF_OK, EGifPutExtensionTrailer(gif) == GIF_OK
            else { throw Self.failure(gif.pointee.Error) }
        }
        let quantizer = ColorQuantizer()
        let deadline = CodingDeadline(options)
        for frame in frames {
            try deadline.check(.gif, "encoding")
            let result = quantizer.quantize(frame.bitmap)
            let delay = Int((frame.duration * 100).rounded())
            let disposal = frames.count > 1 && result.transparentIndex != nil ? 2 : 1
            var control: [UInt8] = [
                UInt8(disposal << 2 | (result.transparentIndex != nil ? 1 : 0)),
                UInt8(delay & 0xFF), UInt8(min(0xFF, delay >> 8)), UInt8(result.transparentIndex ?? 0),
            ]
            guard EGifPutExtension(gif, GRAPHICS_EXT_FUNC_CODE, 4, &control) == GIF_OK else {
                throw Self.failure(gif.pointee.Error)
            }
            // Palettes hold a power of two entries.
            var size = 2
            while size < result.palette.count { size *= 2 }
            var colors = result.palette.map { GifColorType(Red: $0.r, Green: $0.g, Blue: $0.b) }
            colors += Array(repeating: GifColorType(Red: 0, Green: 0, Blue: 0), count: size - colors.count)
            guard let map = GifMakeMapObject(Int32(size), &colors) else {
                throw .encodingFailed(.gif, "cannot allocate a colour map")
            }
            defer { GifFreeMapObject(map) }
            guard EGifPutImageDesc(gif, 0, 0, Int32(width), Int32(height), false, map) == GIF_OK else {
                throw Self.failure(gif.pointee.Error)
            }
            try deadline.check(.gif, "encoding")  // quantising took a while
            var indices = result.indices
            for row in 0..<height {
                if row % 64 == 63 { try deadline.check(.gif, "encoding") }
                let status = indices.withUnsafeMutableBufferPointer {
                    EGifPutLine(gif, $0.baseAddress! + row * width, Int32(width))
                }
                guard status == GIF_OK else { throw Self.failure(gif.pointee.Error) }
            }
        }
        closed = true
        guard EGifCloseFile(gif, &errorCode) == GIF_OK else { throw Self.failure(errorCode) }
        return sink.data
    }

    private static func failure(_ code: Int32) -> CoderError {
        .encodingFailed(.gif, GifErrorString(code).map { String(cString: $0) } ?? "giflib error \(code)")
    }
}

private func gifWrite(
    _ gif: UnsafeMutablePointer<GifFileType>?,
    _ bytes: UnsafePointer<GifByteType>?,
    _ count: Int32
) -> Int32 {
    guard let gif, let bytes, let user = gif.pointee.UserData else { return 0 }
    let sink = Unmanaged<GIFWriter.Sink>.fromOpaque(user).takeUnretainedValue()
    sink.data.append(bytes, count: Int(count))
    return count
}
