import CGIF
import Foundation

/// Writes a GIF89a a frame at a time: one full-canvas image per frame, each with its own
/// palette, cleared before the next frame when the animation has transparency; a NETSCAPE loop
/// extension for animations. The frame count is declared up front (it decides the loop
/// extension and the disposal); each frame is quantised and written as it is added.
///
/// Owns giflib's handle (closed by ``finish()``, or in `deinit` when the write was abandoned)
/// and the `Sink` giflib writes into through `UserData` (retained by the writer for the
/// handle's life). Not thread-safe.
final class GIFAnimationWriter {
    /// Collects giflib's output through `UserData`.
    final class Sink {
        var data = Data()
    }

    private let sink = Sink()
    private let gif: UnsafeMutablePointer<GifFileType>
    private var closed = false
    private let size: PixelSize
    private let isAnimation: Bool
    private let quantizer = ColorQuantizer()
    private let deadline: CodingDeadline
    private var added = 0

    init(size: PixelSize, frameCount: Int, loopCount: Int, options: ImageEncodingOptions) throws(CoderError) {
        guard size.width <= 0xFFFF, size.height <= 0xFFFF else {
            throw .encodingFailed(.gif, "\(size.width)×\(size.height) is larger than GIF's 65535×65535")
        }
        var errorCode: Int32 = 0
        guard let gif = EGifOpen(Unmanaged.passUnretained(sink).toOpaque(), gifWrite, &errorCode) else {
            throw Self.failure(errorCode)
        }
        self.gif = gif
        self.size = size
        isAnimation = frameCount > 1
        deadline = CodingDeadline(options)
        EGifSetGifVersion(gif, true)
        guard EGifPutScreenDesc(gif, Int32(size.width), Int32(size.height), 8, 0, nil) == GIF_OK else {
            throw Self.failure(gif.pointee.Error)
        }
        if isAnimation { try putLoopExtension(loopCount) }
    }

    deinit {
        var errorCode: Int32 = 0
        if !closed { EGifCloseFile(gif, &errorCode) }
    }

    /// NETSCAPE2.0: plays = repeats + 1; 0 (forever) stays 0.
    private func putLoopExtension(_ loopCount: Int) throws(CoderError) {
        let repeats = loopCount == 0 ? 0 : min(0xFFFF, loopCount - 1)
        let ok = "NETSCAPE2.0".utf8CString.withUnsafeBufferPointer { name in
            EGifPutExtensionLeader(gif, APPLICATION_EXT_FUNC_CODE) == GIF_OK
                && EGifPutExtensionBlock(gif, 11, name.baseAddress) == GIF_OK
        }
        var loopBlock: [UInt8] = [1, UInt8(repeats & 0xFF), UInt8(repeats >> 8)]
        guard ok, EGifPutExtensionBlock(gif, 3, &loopBlock) == GIF_OK, EGifPutExtensionTrailer(gif) == GIF_OK
        else { throw Self.failure(gif.pointee.Error) }
    }

    /// Quantises and writes the next frame; its bitmap must have the animation's size.
    func add(_ frame: DecodedImage.Frame) throws(CoderError) {
        try deadline.check(.gif, "encoding")
        let (width, height) = (size.width, size.height)
        try frame.checkSize(size, number: added + 1, format: .gif)
        let result = quantizer.quantize(frame.bitmap)
        let delay = Int((frame.duration * 100).rounded())
        let disposal = isAnimation && result.transparentIndex != nil ? 2 : 1
        var control: [UInt8] = [
            UInt8(disposal << 2 | (result.transparentIndex != nil ? 1 : 0)),
            UInt8(delay & 0xFF), UInt8(min(0xFF, delay >> 8)), UInt8(result.transparentIndex ?? 0),
        ]
        guard EGifPutExtension(gif, GRAPHICS_EXT_FUNC_CODE, 4, &control) == GIF_OK else {
            throw Self.failure(gif.pointee.Error)
        }
        // Palettes hold a power of two entries.
        var paletteSize = 2
        while paletteSize < result.palette.count { paletteSize *= 2 }
        var colors = result.palette.map { GifColorType(Red: $0.r, Green: $0.g, Blue: $0.b) }
        colors += Array(repeating: GifColorType(Red: 0, Green: 0, Blue: 0), count: paletteSize - colors.count)
        guard let map = GifMakeMapObject(Int32(paletteSize), &colors) else {
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
        added += 1
    }

    /// The file, once every frame was added.
    func finish() throws(CoderError) -> Data {
        var errorCode: Int32 = 0
        closed = true
        guard EGifCloseFile(gif, &errorCode) == GIF_OK else { throw Self.failure(errorCode) }
        return sink.data
    }

    private static func failure(_ code: Int32) -> CoderError {
        .encodingFailed(.gif, GifErrorString(code).map { String(cString: $0) } ?? "giflib error \(code)")
    }
}

/// Writes a whole ``DecodedImage`` as a GIF (its first frame only with
/// ``ImageEncodingOptions/firstFrameOnly``).
struct GIFWriter {
    let image: DecodedImage
    let options: ImageEncodingOptions

    func encode() throws(CoderError) -> Data {
        let frames = options.firstFrameOnly ? Array(image.frames.prefix(1)) : image.frames
        let writer = try GIFAnimationWriter(
            size: PixelSize(width: image.width, height: image.height),
            frameCount: frames.count,
            loopCount: image.loopCount,
            options: options
        )
        for frame in frames { try writer.add(frame) }
        return try writer.finish()
    }
}

private func gifWrite(
    _ gif: UnsafeMutablePointer<GifFileType>?,
    _ bytes: UnsafePointer<GifByteType>?,
    _ count: Int32
) -> Int32 {
    guard let gif, let bytes, let user = gif.pointee.UserData else { return 0 }
    let sink = Unmanaged<GIFAnimationWriter.Sink>.fromOpaque(user).takeUnretainedValue()
    sink.data.append(bytes, count: Int(count))
    return count
}
