import CWebP
import Foundation

/// An animated WebP's frames one at a time through libwebp's `WebPAnimDecoder`, which keeps
/// the canvas (and the previous one, for disposal) and composes each frame onto it.
///
/// A jump to a frame goes from the nearest key frame (libwebp's own rule: a frame that needs no
/// earlier one), read as the first frame of a shorter animation: the file's header chunks, then
/// its `ANMF` chunks from the key frame on. libwebp composes that first frame, and every frame
/// after it, as it composes the same frames of the whole file.
///
/// libwebp reads its input in place for the decoder's whole life, so each decoder owns a copy of
/// the bytes it reads (allocated with it, freed in `deinit` after it; see `Reader`). The canvas
/// libwebp returns is its own and is overwritten by the next frame: each frame is copied out.
/// Not thread-safe.
final class WebPFrameDecoder: AnimationFrameDecoder {
    private let data: Data
    private var reader: Reader
    private let canvas: PixelSize
    private(set) var position = 0
    /// Whether the reader reads a shorter animation, from a jump (not the whole file).
    private var readsFromKeyFrame = false
    /// The frames a jump may start from and where their `ANMF` chunks begin, found on the first jump.
    private var keyFrames: [(index: Int, offset: Int)]?

    /// A `WebPAnimDecoder` and the bytes it reads, freed together (the decoder first).
    private final class Reader {
        let bytes: UnsafeMutableRawBufferPointer
        let decoder: OpaquePointer
        let canvas: PixelSize

        init(_ data: Data) throws(CoderError) {
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
    }

    init(data: Data, options: ImageDecodingOptions) throws(CoderError) {
        self.data = data
        reader = try Reader(data)
        canvas = reader.canvas
    }

    func nextCanvas(within deadline: CodingDeadline) throws(CoderError) -> Bitmap? {
        let decoder = reader.decoder
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
        if readsFromKeyFrame {
            reader = try Reader(data)
            readsFromKeyFrame = false
        } else {
            WebPAnimDecoderReset(reader.decoder)
        }
        position = 0
    }

    /// Jumps to the last key frame at or before `index` when that saves decoding (it is ahead of
    /// the next frame, or `index` is behind it); `false` when there is none or the shorter
    /// animation does not parse (frames are then composed in order).
    func skip(to index: Int) -> Bool {
        if keyFrames == nil { keyFrames = Self.keyFrames(of: data) }
        guard let key = keyFrames?.last(where: { $0.index <= index }), key.index > position || index < position else {
            return false
        }
        if key.index == 0 { return (try? rewind()) != nil }
        guard let firstFrame = keyFrames?.first?.offset,
            let shorter = try? Reader(Self.animation(data, header: firstFrame, framesFrom: key.offset))
        else { return false }
        reader = shorter
        readsFromKeyFrame = true
        position = key.index
        return true
    }

    /// `data`'s chunks before `header`, then those from `offset` on, the RIFF size rewritten.
    private static func animation(_ data: Data, header: Int, framesFrom offset: Int) -> Data {
        var shorter = Data(capacity: header + data.count - offset)
        shorter.append(data.subdata(in: data.startIndex..<data.startIndex + header))
        shorter.append(data.subdata(in: data.startIndex + offset..<data.endIndex))
        setRIFFSize(of: &shorter)
        return shorter
    }

    /// Writes `data`'s length less 8 into its RIFF header's size field.
    static func setRIFFSize(of data: inout Data) {
        let riffSize = UInt32(data.count - 8)
        data.replaceSubrange(
            data.startIndex + 4..<data.startIndex + 8,
            with: (0..<4).map { UInt8(truncatingIfNeeded: riffSize >> (8 * $0)) }
        )
    }

    /// Each frame that libwebp composes on a cleared canvas (`anim_decode.c`'s `IsKeyFrame`: the
    /// first; one without alpha or blending that covers the canvas; one after a frame disposed
    /// to the background that covered the canvas or was itself a key frame), with where its
    /// `ANMF` chunk begins. Empty when the file does not parse.
    static func keyFrames(of data: Data) -> [(index: Int, offset: Int)] {
        let offsets = frameChunks(data).map(\.offset)
        return data.withUnsafeBytes { raw -> [(index: Int, offset: Int)] in
            var webpData = WebPData(bytes: raw.baseAddress?.assumingMemoryBound(to: UInt8.self), size: raw.count)
            guard let demux = WebPDemux(&webpData) else { return [] }
            defer { WebPDemuxDelete(demux) }
            let count = Int(WebPDemuxGetI(demux, WEBP_FF_FRAME_COUNT))
            guard count == offsets.count else { return [] }
            let canvas = (
                Int32(WebPDemuxGetI(demux, WEBP_FF_CANVAS_WIDTH)), Int32(WebPDemuxGetI(demux, WEBP_FF_CANVAS_HEIGHT))
            )
            var keys: [(index: Int, offset: Int)] = []
            var previous: (disposesToBackground: Bool, coversCanvas: Bool, wasKey: Bool)?
            var iterator = WebPIterator()
            for index in 0..<count {
                guard WebPDemuxGetFrame(demux, Int32(index + 1), &iterator) != 0 else { return keys }
                let covers = iterator.width == canvas.0 && iterator.height == canvas.1
                let opaque = iterator.has_alpha == 0 || iterator.blend_method == WEBP_MUX_NO_BLEND
                let isKey: Bool
                if let previous {
                    isKey =
                        (opaque && covers)
                        || (previous.disposesToBackground && (previous.coversCanvas || previous.wasKey))
                } else {
                    isKey = true
                }
                if isKey { keys.append((index, offsets[index])) }
                previous = (iterator.dispose_method == WEBP_MUX_DISPOSE_BACKGROUND, covers, isKey)
                WebPDemuxReleaseIterator(&iterator)
            }
            return keys
        }
    }

    /// Where each `ANMF` chunk begins, in order, and its payload's size (of data that may end
    /// inside the last one).
    static func frameChunks(_ data: Data) -> [(offset: Int, size: Int)] {
        data.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) -> [(offset: Int, size: Int)] in
            let uint32 = { (at: Int) in (0..<4).reduce(0) { $0 | Int(bytes[at + $1]) << (8 * $1) } }
            var chunks: [(offset: Int, size: Int)] = []
            var offset = 12  // "RIFF", the size, "WEBP"
            while offset + 8 <= bytes.count {
                let size = uint32(offset + 4)
                if bytes[offset] == 0x41, bytes[offset + 1] == 0x4E, bytes[offset + 2] == 0x4D,
                    bytes[offset + 3] == 0x46
                {
                    chunks.append((offset, size))  // "ANMF"
                }
                offset += 8 + size + (size & 1)
            }
            return chunks
        }
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
