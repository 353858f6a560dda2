import CWebP
import Foundation

/// An animated WebP's frames one at a time through libwebp's `WebPAnimDecoder`, which keeps
/// the canvas (and the previous one, for disposal) and composes each frame onto it.
///
/// libwebp reads the file in place for the decoder's whole life, so the decoder owns a copy of
/// the bytes (allocated here, freed in `deinit` after the decoder). The canvas libwebp returns
/// is its own and is overwritten by the next frame: each frame is copied out. Not thread-safe.
final class WebPFrameDecoder: AnimationFrameDecoder {
    private let bytes: UnsafeMutableRawBufferPointer
    private let decoder: OpaquePointer
    private let canvas: PixelSize
    private(set) var position = 0

    init(data: Data, options: ImageDecodingOptions) throws(CoderError) {
        guard !data.isEmpty else { throw .emptyData }
        let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: data.count, alignment: 16)
        data.copyBytes(to: bytes)
        var webpData = WebPData(bytes: bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), size: bytes.count)
        var decoderOptions = WebPAnimDecoderOptions()
        var info = WebPAnimInfo()
        guard WebPAnimDecoderOptionsInit(&decoderOptions) != 0 else {
            bytes.deallocate()
            throw .outOfMemory(.webp, "libwebp version mismatch")
        }
        decoderOptions.color_mode = MODE_RGBA
        decoderOptions.use_threads = 0
        guard let decoder = WebPAnimDecoderNew(&webpData, &decoderOptions) else {
            bytes.deallocate()
            throw .corruptData(.webp, "cannot parse the WebP animation")
        }
        guard WebPAnimDecoderGetInfo(decoder, &info) != 0 else {
            WebPAnimDecoderDelete(decoder)
            bytes.deallocate()
            throw .corruptData(.webp, "cannot read the WebP animation header")
        }
        self.bytes = bytes
        self.decoder = decoder
        canvas = PixelSize(width: Int(info.canvas_width), height: Int(info.canvas_height))
    }

    deinit {
        WebPAnimDecoderDelete(decoder)
        bytes.deallocate()
    }

    func nextCanvas(within deadline: CodingDeadline) throws(CoderError) -> Bitmap? {
        guard WebPAnimDecoderHasMoreFrames(decoder) != 0 else { return nil }
        var buffer: UnsafeMutablePointer<UInt8>?
        var timestamp: Int32 = 0
        guard WebPAnimDecoderGetNext(decoder, &buffer, &timestamp) != 0, let buffer else {
            throw .corruptData(.webp, "cannot decode frame \(position + 1)")
        }
        position += 1
        return Bitmap(
            width: canvas.width,
            height: canvas.height,
            hasAlpha: true,
            pixels: Array(UnsafeBufferPointer(start: buffer, count: canvas.pixelCount * 4))
        )
    }

    func rewind() throws(CoderError) {
        WebPAnimDecoderReset(decoder)
        position = 0
    }

    /// The animation's facts from its chunks (no pixel is decoded): the canvas, each frame's
    /// duration as the whole decode reads it (10 ms or less shows for 100 ms), the loop count,
    /// the alpha flag and the EXIF orientation.
    static func info(of data: Data, options: ImageDecodingOptions) throws(CoderError) -> AnimationInfo {
        let parsed = data.withUnsafeBytes { raw -> (PixelSize, [TimeInterval], Int, Bool)? in
            var webpData = WebPData(bytes: raw.baseAddress?.assumingMemoryBound(to: UInt8.self), size: raw.count)
            guard let demux = WebPDemux(&webpData) else { return nil }
            defer { WebPDemuxDelete(demux) }
            let canvas = PixelSize(
                width: Int(WebPDemuxGetI(demux, WEBP_FF_CANVAS_WIDTH)),
                height: Int(WebPDemuxGetI(demux, WEBP_FF_CANVAS_HEIGHT))
            )
            let count = Int(WebPDemuxGetI(demux, WEBP_FF_FRAME_COUNT))
            var durations: [TimeInterval] = []
            var iterator = WebPIterator()
            for number in 0..<count where WebPDemuxGetFrame(demux, Int32(number + 1), &iterator) != 0 {
                let milliseconds = Int(iterator.duration)
                durations.append(milliseconds <= 10 ? 0.1 : Double(milliseconds) / 1000)
                WebPDemuxReleaseIterator(&iterator)
            }
            let flags = WebPDemuxGetI(demux, WEBP_FF_FORMAT_FLAGS)
            let loops = Int(WebPDemuxGetI(demux, WEBP_FF_LOOP_COUNT))
            return (canvas, durations, loops, flags & UInt32(ALPHA_FLAG.rawValue) != 0)
        }
        guard let (canvas, durations, loopCount, hasAlpha) = parsed else {
            throw .corruptData(.webp, "cannot parse the WebP animation")
        }
        try options.checkPixelLimit(canvas, format: .webp)
        guard !durations.isEmpty else { throw .corruptData(.webp, "the WebP animation has no frames") }
        return AnimationInfo(
            format: .webp,
            canvasSize: canvas,
            durations: durations,
            loopCount: loopCount,
            mayHaveAlpha: hasAlpha,
            orientation: WebPCoder.orientation(in: data)
        )
    }
}
