import CGIF
import Foundation

/// A GIF's frames one at a time through giflib's record API: the canvas carries the
/// composition (disposal, transparency) from frame to frame, and nothing else is kept.
///
/// Owns giflib's handle and the `GIFSource` it reads through (allocated here, freed in
/// `deinit`; giflib holds a pointer to it between calls). Not thread-safe.
final class GIFFrameDecoder: AnimationFrameDecoder {
    private let source: UnsafeMutablePointer<GIFSource>
    /// `nil` only after a rewind failed to reopen the data.
    private var gif: UnsafeMutablePointer<GifFileType>?
    private var composition: GIFComposition
    private let options: ImageDecodingOptions
    private var ended = false
    private(set) var position = 0
    /// Where the frames that need no earlier frame begin, found by one scan on the first jump.
    private var keyFrames: [KeyFrame]?

    /// A frame whose composed canvas needs no earlier frame: it covers the canvas with opaque
    /// pixels (and is not undone by a "restore previous" disposal), or the frame before it
    /// cleared the whole canvas. `offset` is where its records (its graphic control) begin.
    struct KeyFrame {
        var index: Int
        var offset: Int
    }

    init(data: Data, options: ImageDecodingOptions) throws(CoderError) {
        let source = UnsafeMutablePointer<GIFSource>.allocate(capacity: 1)
        source.initialize(to: GIFSource(data: data))
        let opened: UnsafeMutablePointer<GifFileType>
        do throws(CoderError) {
            opened = try Self.open(source)
            let canvas = PixelSize(width: Int(opened.pointee.SWidth), height: Int(opened.pointee.SHeight))
            do throws(CoderError) {
                try options.checkPixelLimit(canvas, format: .gif)  // before the canvas is allocated
            } catch {
                Self.close(opened)
                throw error
            }
        } catch {
            source.deinitialize(count: 1)
            source.deallocate()
            throw error
        }
        self.source = source
        self.options = options
        gif = opened
        composition = Self.composition(of: opened)
    }

    deinit {
        if let gif { Self.close(gif) }
        source.deinitialize(count: 1)
        source.deallocate()
    }

    private static func close(_ gif: UnsafeMutablePointer<GifFileType>) {
        var errorCode: Int32 = 0
        DGifCloseFile(gif, &errorCode)
    }

    private static func open(
        _ source: UnsafeMutablePointer<GIFSource>
    ) throws(CoderError) -> UnsafeMutablePointer<
        GifFileType
    > {
        var errorCode: Int32 = 0
        guard let gif = DGifOpen(source, gifRead, &errorCode) else {
            throw GIFReader.error(code: errorCode, source: source.pointee)
        }
        return gif
    }

    private static func composition(of gif: UnsafeMutablePointer<GifFileType>) -> GIFComposition {
        var composition = GIFComposition(
            canvasSize: PixelSize(width: Int(gif.pointee.SWidth), height: Int(gif.pointee.SHeight)),
            globalColors: GIFReader.palette(gif.pointee.SColorMap)
        )
        composition.keepsFrames = false
        return composition
    }

    func nextCanvas(within deadline: CodingDeadline) throws(CoderError) -> Bitmap? {
        guard !ended else { return nil }
        guard let gif else { throw .corruptData(.gif, "the GIF could not be read again") }
        let source = source
        let fail = { GIFReader.error(code: gif.pointee.Error, source: source.pointee) }
        while true {
            var record = UNDEFINED_RECORD_TYPE
            guard DGifGetRecordType(gif, &record) == GIF_OK else {
                // A file cut off after a complete frame ends there, as the whole decode does.
                if source.pointee.hitEnd && position > 0 {
                    ended = true
                    return nil
                }
                throw fail()
            }
            switch record {
            case EXTENSION_RECORD_TYPE:
                // Copied out: two `inout` accesses to one class property would overlap.
                var (control, loopCount) = (composition.control, composition.declaredLoopCount)
                try GIFReader.readExtension(gif, control: &control, loopCount: &loopCount, fail: fail)
                (composition.control, composition.declaredLoopCount) = (control, loopCount)
            case IMAGE_DESC_RECORD_TYPE:
                let rect = try GIFReader.readImageRect(gif, fail: fail)
                guard rect.width > 0, rect.height > 0 else {
                    throw .corruptData(.gif, "frame \(position + 1) has an empty size \(rect.width)×\(rect.height)")
                }
                try options.checkPixelLimit(PixelSize(width: rect.width, height: rect.height), format: .gif)
                let frame = try GIFReader.drawImage(gif, rect: rect, into: &composition, fail: fail)
                position += 1
                return frame.bitmap
            case TERMINATE_RECORD_TYPE:
                ended = true
                return nil
            default:
                throw .corruptData(.gif, "unknown record type")
            }
        }
    }

    func rewind() throws(CoderError) {
        if let gif { Self.close(gif) }
        gif = nil
        source.pointee.offset = 0
        source.pointee.hitEnd = false
        let reopened = try Self.open(source)
        gif = reopened
        composition = Self.composition(of: reopened)
        ended = false
        position = 0
    }

    /// Jumps to the last key frame at or before `index`, when that saves decoding: it is ahead
    /// of the frame next decoded, or `index` is behind it. giflib is opened afresh (its list of
    /// images read so far would otherwise grow with every loop) and reads on from the frame's
    /// records with a cleared canvas, the state that frame's composition assumes.
    func skip(to index: Int) -> Bool {
        if keyFrames == nil {
            var source = GIFSource(data: source.pointee.data)
            keyFrames = withUnsafeMutablePointer(to: &source) { source in
                guard let gif = try? Self.open(source) else { return [] }
                defer { Self.close(gif) }
                let canvas = PixelSize(width: Int(gif.pointee.SWidth), height: Int(gif.pointee.SHeight))
                return (try? Self.scan(gif, source: source, canvas: canvas).keyFrames) ?? []
            }
        }
        guard let key = keyFrames?.last(where: { $0.index <= index }), key.index > position || index < position,
            (try? rewind()) != nil
        else { return false }
        source.pointee.offset = key.offset
        position = key.index
        return true
    }

    /// The animation's facts from one pass over its blocks, skipping the compressed pixels:
    /// each frame's duration, the loop count, and whether any frame can have transparent pixels
    /// (a transparent index, an area cleared by disposal, a first frame short of the canvas).
    static func info(of data: Data, options: ImageDecodingOptions) throws(CoderError) -> AnimationInfo {
        var source = GIFSource(data: data)
        return try withUnsafeMutablePointer(to: &source) { (source) throws(CoderError) -> AnimationInfo in
            let gif = try open(source)
            defer { close(gif) }
            let canvas = PixelSize(width: Int(gif.pointee.SWidth), height: Int(gif.pointee.SHeight))
            try options.checkPixelLimit(canvas, format: .gif)
            return try scan(gif, source: source, canvas: canvas).info
        }
    }

    private static func scan(
        _ gif: UnsafeMutablePointer<GifFileType>,
        source: UnsafeMutablePointer<GIFSource>,
        canvas: PixelSize
    ) throws(CoderError) -> (info: AnimationInfo, keyFrames: [KeyFrame]) {
        let fail = { GIFReader.error(code: gif.pointee.Error, source: source.pointee) }
        var control = GIFFrameControl()
        var loopCount: Int?
        var durations: [TimeInterval] = []
        var mayHaveAlpha = false
        var keyFrames: [KeyFrame] = []
        var recordsStart = source.pointee.offset
        var clearedWholeCanvas = true  // the canvas before the first frame is clear
        scanning: while true {
            var record = UNDEFINED_RECORD_TYPE
            guard DGifGetRecordType(gif, &record) == GIF_OK else {
                if source.pointee.hitEnd && !durations.isEmpty { break scanning }
                throw fail()
            }
            switch record {
            case EXTENSION_RECORD_TYPE:
                try GIFReader.readExtension(gif, control: &control, loopCount: &loopCount, fail: fail)
            case IMAGE_DESC_RECORD_TYPE:
                let rect = try GIFReader.readImageRect(gif, fail: fail)
                let coversCanvas =
                    rect.clipped(to: canvas) == PixelRect(x: 0, y: 0, width: canvas.width, height: canvas.height)
                mayHaveAlpha =
                    mayHaveAlpha || control.transparentIndex != nil || control.disposal == 2
                    || (durations.isEmpty && !coversCanvas)
                let paintsWholeCanvas = coversCanvas && control.transparentIndex == nil && control.disposal != 3
                if clearedWholeCanvas || paintsWholeCanvas {
                    keyFrames.append(KeyFrame(index: durations.count, offset: recordsStart))
                }
                clearedWholeCanvas = coversCanvas && control.disposal == 2
                durations.append(GIFComposition.duration(of: control))
                try GIFReader.skipImageData(gif, fail: fail)
                recordsStart = source.pointee.offset
                control = GIFFrameControl()
            case TERMINATE_RECORD_TYPE:
                break scanning
            default:
                throw .corruptData(.gif, "unknown record type")
            }
        }
        guard !durations.isEmpty else { throw .corruptData(.gif, "the GIF has no image") }
        if durations.count == 1 { durations[0] = 0 }
        let info = AnimationInfo(
            format: .gif,
            canvasSize: canvas,
            durations: durations,
            loopCount: durations.count > 1 ? loopCount ?? 1 : 1,
            mayHaveAlpha: mayHaveAlpha,
            orientation: .up
        )
        return (info, keyFrames)
    }
}
