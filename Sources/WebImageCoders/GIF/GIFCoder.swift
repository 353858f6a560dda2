import CGIF
import Foundation

/// GIF through giflib: frames composed with every disposal method and transparency, loop count
/// from the NETSCAPE extension, delays as browsers play them (under 20 ms shows for 100 ms), and
/// the first frame as a preview once it has arrived. Encodes still or animated GIF (colours
/// quantised to 256). Stateless and thread-safe.
public struct GIFCoder: ImageCoding, ProgressiveImageDecoding {
    public init() {}

    public func canDecode(_ details: ImageFormatDetails) -> Bool { details.format == .gif }

    public func canEncode(_ format: ImageFormat) -> Bool { format == .gif }

    public func decode(_ data: Data, options: ImageDecodingOptions) throws(CoderError) -> DecodedImage {
        guard !data.isEmpty else { throw .emptyData }
        // Frames on demand, or delivered smaller than the canvas: decoded one at a time.
        if let reduced = try AnimatedImage.decodeFrameByFrame(data, options: options) { return reduced }
        var reader = GIFReader(data: data, options: options, stopAfterFirstFrame: false)
        return try reader.decode().finished(with: options, deadline: reader.deadline)
    }

    public func makeIncrementalDecoder(options: ImageDecodingOptions) -> any IncrementalImageDecoding {
        GIFIncrementalDecoder(options: options)
    }

    public func encode(
        _ image: DecodedImage,
        as format: ImageFormat,
        options: ImageEncodingOptions
    )
        throws(CoderError) -> Data
    {
        guard format == .gif else { throw .encodingFailed(format, "the GIF coder writes only GIF") }
        // GIF carries no profile: a kept one is applied to the pixels first.
        return try GIFWriter(image: image.withProfileFitting(nil), options: options).encode()
    }
}

/// Shows the first frame of a GIF once all of it has arrived; the final result is a one-shot decode.
///
/// Each attempt parses the data from the start, so attempts wait for the data to grow by an
/// eighth (at least 1 KiB): the work stays linear in the size however small the chunks are.
final class GIFIncrementalDecoder: IncrementalImageDecoding {
    private let options: ImageDecodingOptions
    private var shownFirstFrame = false
    private var lastAttemptSize = 0
    /// Decode attempts so far (for tests).
    private(set) var attempts = 0

    init(options: ImageDecodingOptions) {
        self.options = options
    }

    func update(_ data: Data, isComplete: Bool) throws(CoderError) -> DecodedImage? {
        if isComplete { return try GIFCoder().decode(data, options: options) }
        guard !shownFirstFrame, data.count - lastAttemptSize >= max(1024, lastAttemptSize / 8) else { return nil }
        lastAttemptSize = data.count
        attempts += 1
        var reader = GIFReader(data: data, options: options, stopAfterFirstFrame: true)
        guard var image = try? reader.decode() else { return nil }
        shownFirstFrame = true
        image.isPartial = true
        return try (consume image).finished(with: options, deadline: reader.deadline)
    }
}

/// One pass over a GIF with giflib's record API.
struct GIFReader {
    let data: Data
    let options: ImageDecodingOptions
    let stopAfterFirstFrame: Bool
    /// Counted from the reader's creation; the caller finishes the image within it too.
    let deadline: CodingDeadline

    private var offset = 0

    init(data: Data, options: ImageDecodingOptions, stopAfterFirstFrame: Bool) {
        self.data = data
        self.options = options
        self.stopAfterFirstFrame = stopAfterFirstFrame
        self.deadline = CodingDeadline(options)
    }

    mutating func decode() throws(CoderError) -> DecodedImage {
        var errorCode: Int32 = 0
        var source = GIFSource(data: data)
        return try withUnsafeMutablePointer(to: &source) { (sourcePointer) throws(CoderError) -> DecodedImage in
            guard let gif = DGifOpen(sourcePointer, gifRead, &errorCode) else {
                throw Self.error(code: errorCode, source: sourcePointer.pointee)
            }
            defer { DGifCloseFile(gif, &errorCode) }
            return try decode(gif, source: sourcePointer)
        }
    }

    static func error(code: Int32, source: GIFSource) -> CoderError {
        let message = GifErrorString(code).map { String(cString: $0) } ?? "giflib error \(code)"
        if source.hitEnd || code == D_GIF_ERR_READ_FAILED || code == D_GIF_ERR_EOF_TOO_SOON {
            return .truncatedData(.gif, message)
        }
        return .corruptData(.gif, message)
    }

    private func decode(
        _ gif: UnsafeMutablePointer<GifFileType>,
        source: UnsafeMutablePointer<GIFSource>
    ) throws(CoderError) -> DecodedImage {
        let canvasSize = PixelSize(width: Int(gif.pointee.SWidth), height: Int(gif.pointee.SHeight))
        try options.checkPixelLimit(canvasSize, format: .gif)
        // The frames the file declares, counted from the block headers before a canvas is
        // allocated: a 500-byte file of 20 tiny frames on a 10000×10000 canvas stops here.
        if !options.firstFrameOnly, !stopAfterFirstFrame, let header = ImageHeader(data) {
            try options.checkAnimationLimits(frameCount: header.frameCount, canvas: canvasSize, format: .gif)
        }
        var composition = GIFComposition(canvasSize: canvasSize, globalColors: Self.palette(gif.pointee.SColorMap))
        let fail = { Self.error(code: gif.pointee.Error, source: source.pointee) }
        recordLoop: while true {
            var record = UNDEFINED_RECORD_TYPE
            guard DGifGetRecordType(gif, &record) == GIF_OK else {
                // A file cut off after a complete frame (no trailer) still shows what it has.
                if source.pointee.hitEnd && !composition.frames.isEmpty { break recordLoop }
                throw fail()
            }
            switch record {
            case EXTENSION_RECORD_TYPE:
                try Self.readExtension(
                    gif,
                    control: &composition.control,
                    loopCount: &composition.declaredLoopCount,
                    fail: fail
                )
            case IMAGE_DESC_RECORD_TYPE:
                if try readImage(gif, into: &composition, fail: fail), stopAfterFirstFrame { break recordLoop }
            case TERMINATE_RECORD_TYPE:
                break recordLoop
            default:
                throw .corruptData(.gif, "unknown record type")
            }
        }
        return try composition.image()
    }

    /// An extension block: the graphic control for the next image, and the loop count of the
    /// first NETSCAPE2.0 (or ANIMEXTS1.0) block; others are skipped.
    static func readExtension(
        _ gif: UnsafeMutablePointer<GifFileType>,
        control: inout GIFFrameControl,
        loopCount: inout Int?,
        fail: () -> CoderError
    ) throws(CoderError) {
        var code: Int32 = 0
        var block: UnsafeMutablePointer<GifByteType>?
        guard DGifGetExtension(gif, &code, &block) == GIF_OK else { throw fail() }
        if code == GRAPHICS_EXT_FUNC_CODE, let block, block[0] >= 4 {
            let packed = Int(block[1])
            control.disposal = (packed >> 2) & 7
            control.delayCentiseconds = Int(block[2]) | Int(block[3]) << 8
            control.transparentIndex = packed & 1 != 0 ? Int(block[4]) : nil
        }
        var isNetscape = false
        if code == APPLICATION_EXT_FUNC_CODE, let block, block[0] == 11 {
            let name = String(decoding: UnsafeBufferPointer(start: block + 1, count: 11), as: UTF8.self)
            isNetscape = name == "NETSCAPE2.0" || name == "ANIMEXTS1.0"
        }
        while block != nil {
            guard DGifGetExtensionNext(gif, &block) == GIF_OK else { throw fail() }
            if isNetscape, loopCount == nil, let sub = block, sub[0] >= 3, sub[1] == 1 {
                let repeats = Int(sub[2]) | Int(sub[3]) << 8
                loopCount = repeats == 0 ? 0 : repeats + 1  // plays = repeats after the first
            }
        }
    }

    /// An image block: drawn onto the canvas as a new frame (`true`), or, past the first frame
    /// with `firstFrameOnly`, counted and skipped (`false`). Checks the deadline and the limits.
    private func readImage(
        _ gif: UnsafeMutablePointer<GifFileType>,
        into composition: inout GIFComposition,
        fail: () -> CoderError
    ) throws(CoderError) -> Bool {
        let rect = try Self.readImageRect(gif, fail: fail)
        composition.frameCount += 1
        try deadline.check(.gif)
        if options.firstFrameOnly && !composition.frames.isEmpty {
            // Count the remaining frames without decoding them.
            try Self.skipImageData(gif, fail: fail)
            composition.control = GIFFrameControl()
            return false
        }
        guard rect.width > 0, rect.height > 0 else {
            throw .corruptData(.gif, "frame \(composition.frameCount) has an empty size \(rect.width)×\(rect.height)")
        }
        try options.checkPixelLimit(PixelSize(width: rect.width, height: rect.height), format: .gif)
        if !options.firstFrameOnly {
            try options.checkAnimationLimits(
                frameCount: composition.frameCount,
                canvas: composition.canvasSize,
                format: .gif
            )
        }
        try Self.drawImage(gif, rect: rect, into: &composition, fail: fail)
        return true
    }

    /// Reads the next image descriptor: where the image goes on the canvas.
    static func readImageRect(
        _ gif: UnsafeMutablePointer<GifFileType>,
        fail: () -> CoderError
    ) throws(CoderError) -> PixelRect {
        guard DGifGetImageDesc(gif) == GIF_OK else { throw fail() }
        let desc = gif.pointee.Image
        return PixelRect(x: Int(desc.Left), y: Int(desc.Top), width: Int(desc.Width), height: Int(desc.Height))
    }

    /// Draws the image block whose descriptor was read (covering `rect`) onto the composition's
    /// canvas: the frame it makes, disposal applied after it.
    @discardableResult
    static func drawImage(
        _ gif: UnsafeMutablePointer<GifFileType>,
        rect: PixelRect,
        into composition: inout GIFComposition,
        fail: () -> CoderError
    ) throws(CoderError) -> DecodedImage.Frame {
        let desc = gif.pointee.Image
        let image = GIFFrameImage(
            rect: rect,
            interlaced: desc.Interlace,
            colors: palette(desc.ColorMap) ?? composition.globalColors ?? grayscalePalette,
            transparentIndex: composition.control.transparentIndex
        )
        return try composition.addFrame(covering: rect) { (canvas, line) throws(CoderError) in
            try drawImage(gif, image, line: &line, on: &canvas, fail: fail)
        }
    }

    /// Decodes one image's LZW lines and paints its opaque pixels onto the canvas (clipped).
    static func drawImage(
        _ gif: UnsafeMutablePointer<GifFileType>,
        _ image: GIFFrameImage,
        line: inout [UInt8],
        on canvas: inout Bitmap,
        fail: () -> CoderError
    ) throws(CoderError) {
        let rect = image.rect
        let table = image.pixelTable()
        // Interlaced rows arrive in four passes: every 8th from 0, every 8th from 4, every 4th
        // from 2, every 2nd from 1.
        var rowOrder: [Int] = []
        if image.interlaced {
            for (start, step) in [(0, 8), (4, 8), (2, 4), (1, 2)] {
                rowOrder += Swift.stride(from: start, to: rect.height, by: step)
            }
        }
        let visible = rect.clipped(to: PixelSize(width: canvas.width, height: canvas.height))
        let canvasWidth = canvas.width
        if line.count < rect.width { line = [UInt8](repeating: 0, count: rect.width) }
        var failed = false
        table.withUnsafeBufferPointer { table in
            line.withUnsafeMutableBufferPointer { line in
                canvas.pixels.withUnsafeMutableBytes { raw in
                    let pixels = raw.bindMemory(to: UInt32.self)
                    for index in 0..<rect.height {
                        guard DGifGetLine(gif, line.baseAddress, Int32(rect.width)) == GIF_OK else {
                            failed = true
                            return
                        }
                        let y = rect.y + (image.interlaced ? rowOrder[index] : index)
                        guard y >= visible.y, y < visible.y + visible.height else { continue }
                        let rowStart = y * canvasWidth
                        for x in visible.x..<visible.x + visible.width {
                            let pixel = table[Int(line[x - rect.x])]
                            if pixel != 0 { pixels[rowStart + x] = pixel }
                        }
                    }
                }
            }
        }
        if failed { throw fail() }
    }

    /// Reads past an image's compressed data without decoding it.
    static func skipImageData(
        _ gif: UnsafeMutablePointer<GifFileType>,
        fail: () -> CoderError
    ) throws(CoderError) {
        var codeSize: Int32 = 0
        var block: UnsafeMutablePointer<GifByteType>?
        guard DGifGetCode(gif, &codeSize, &block) == GIF_OK else { throw fail() }
        while block != nil {
            guard DGifGetCodeNext(gif, &block) == GIF_OK else { throw fail() }
        }
    }

    static func palette(_ map: UnsafeMutablePointer<ColorMapObject>?) -> [RGBA]? {
        guard let map, let colors = map.pointee.Colors, map.pointee.ColorCount > 0 else { return nil }
        return (0..<Int(map.pointee.ColorCount)).map {
            RGBA(r: colors[$0].Red, g: colors[$0].Green, b: colors[$0].Blue)
        }
    }

    /// Used when a GIF has no colour table at all.
    static let grayscalePalette = (0..<256).map { RGBA(r: UInt8($0), g: UInt8($0), b: UInt8($0)) }
}

/// The bytes giflib reads, through `UserData`.
struct GIFSource {
    let data: Data
    var offset = 0
    var hitEnd = false
}

/// giflib's input callback: copies up to `count` bytes from the `GIFSource` in `UserData`.
func gifRead(
    _ gif: UnsafeMutablePointer<GifFileType>?,
    _ buffer: UnsafeMutablePointer<GifByteType>?,
    _ count: Int32
) -> Int32 {
    guard let gif, let buffer, count > 0, let user = gif.pointee.UserData else { return 0 }
    let source = user.assumingMemoryBound(to: GIFSource.self)
    let available = source.pointee.data.count - source.pointee.offset
    let length = min(Int(count), available)
    if length < Int(count) { source.pointee.hitEnd = true }
    guard length > 0 else { return 0 }
    source.pointee.data.withUnsafeBytes { bytes in
        let start = source.pointee.offset
        UnsafeMutableRawPointer(buffer).copyMemory(from: bytes.baseAddress! + start, byteCount: length)
    }
    source.pointee.offset += length
    return Int32(length)
}
