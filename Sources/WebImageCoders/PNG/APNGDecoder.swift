import Foundation

/// The animation chunks of an APNG file (acTL, fcTL, IDAT/fdAT), located but not decoded.
struct APNGAnimation {
    enum Dispose: UInt8 {
        case none = 0
        case background = 1
        case previous = 2
    }

    struct Frame {
        var rect: PixelRect
        var delayNumerator: Int
        var delayDenominator: Int
        var dispose: Dispose
        var blendOver: Bool
        /// Payload ranges of the frame's image data (fdAT payloads without their sequence number).
        var dataRanges: [Range<Int>] = []
    }

    var header: Range<Int>
    var canvas: PixelSize
    var declaredFrameCount: Int
    var playCount: Int
    var hasAlpha: Bool
    /// The colour chunks (iCCP, sRGB, gAMA, cHRM), PLTE and tRNS, shared by every frame.
    var sharedChunks: [PNGChunk]
    var frames: [Frame]
    var sawEnd: Bool

    /// Parses the chunk layout; `nil` when the file is not animated (no acTL before IDAT). A still
    /// image is known at its first IDAT, so the chunks after it are never walked.
    init?(parsing bytes: UnsafeRawBufferPointer) throws(CoderError) {
        var chunks = PNGChunkSequence(bytes: bytes)
        guard let ihdr = chunks.next(), ihdr.type == "IHDR", ihdr.payload.count == 13 else {
            throw .corruptData(.png, "the PNG does not start with an IHDR chunk")
        }
        header = ihdr.payload
        canvas = PixelSize(
            width: Int(PNGChunkReader.bigEndianUInt32(bytes, at: ihdr.payload.lowerBound)),
            height: Int(PNGChunkReader.bigEndianUInt32(bytes, at: ihdr.payload.lowerBound + 4))
        )
        let colorType = bytes[ihdr.payload.lowerBound + 9]
        hasAlpha = colorType & 4 != 0
        declaredFrameCount = 0
        playCount = 0
        sharedChunks = []
        frames = []
        sawEnd = false

        var sawAnimationControl = false
        var sawImageData = false
        var current: Frame?
        while let chunk = chunks.next() {
            if chunk.type == "IDAT", !sawAnimationControl { return nil }
            let start = chunk.payload.lowerBound
            switch chunk.type {
            case "acTL" where !sawImageData && chunk.payload.count == 8:
                sawAnimationControl = true
                declaredFrameCount = Int(PNGChunkReader.bigEndianUInt32(bytes, at: start))
                playCount = Int(PNGChunkReader.bigEndianUInt32(bytes, at: start + 4))
            case "PLTE" where !sawImageData, "tRNS" where !sawImageData, "iCCP" where !sawImageData,
                "sRGB" where !sawImageData, "gAMA" where !sawImageData, "cHRM" where !sawImageData:
                if chunk.type == "tRNS" { hasAlpha = true }
                sharedChunks.append(chunk)
            case "fcTL" where chunk.payload.count == 26:
                if let finished = current { frames.append(finished) }
                let delayDenominator = Int(PNGChunkReader.bigEndianUInt16(bytes, at: start + 22))
                current = Frame(
                    rect: PixelRect(
                        x: Int(PNGChunkReader.bigEndianUInt32(bytes, at: start + 12)),
                        y: Int(PNGChunkReader.bigEndianUInt32(bytes, at: start + 16)),
                        width: Int(PNGChunkReader.bigEndianUInt32(bytes, at: start + 4)),
                        height: Int(PNGChunkReader.bigEndianUInt32(bytes, at: start + 8))
                    ),
                    delayNumerator: Int(PNGChunkReader.bigEndianUInt16(bytes, at: start + 20)),
                    delayDenominator: delayDenominator == 0 ? 100 : delayDenominator,
                    dispose: Dispose(rawValue: bytes[start + 24]) ?? .none,
                    blendOver: bytes[start + 25] == 1
                )
            case "IDAT":
                sawImageData = true
                // The default image is frame 0 only when an fcTL came before it.
                if current != nil, frames.isEmpty { current?.dataRanges.append(chunk.payload) }
            case "fdAT" where chunk.payload.count > 4:
                current?.dataRanges.append(chunk.payload.lowerBound + 4..<chunk.payload.upperBound)
            case "IEND":
                sawEnd = true
            default:
                break
            }
        }
        if let finished = current { frames.append(finished) }
        guard sawAnimationControl, declaredFrameCount > 0 else { return nil }
        frames.removeAll { $0.dataRanges.isEmpty }
    }
}

/// Decodes a whole APNG: every frame composed by ``APNGFrameDecoder``, kept in order.
struct APNGDecoder {
    let animation: APNGAnimation
    let data: Data
    let options: ImageDecodingOptions
    let deadline: CodingDeadline

    func decode() throws(CoderError) -> DecodedImage {
        let decoder = try APNGFrameDecoder(animation: animation, data: data, options: options)
        let frameLimit = options.firstFrameOnly ? 1 : animation.frames.count
        try options.checkAnimationLimits(frameCount: frameLimit, canvas: animation.canvas, format: .png)
        var output: [DecodedImage.Frame] = []
        var hasTransparency = animation.hasAlpha
        while output.count < frameLimit, let canvas = try decoder.nextCanvas(within: deadline) {
            hasTransparency = hasTransparency || canvas.containsTransparency
            output.append(.init(bitmap: canvas, duration: Self.duration(animation.frames[output.count])))
        }
        for index in output.indices { output[index].bitmap.hasAlpha = hasTransparency }
        return try DecodedImage(
            frames: output,
            loopCount: animation.playCount,
            format: .png,
            sourceSize: animation.canvas,
            sourceFrameCount: animation.frames.count,
            colorProfile: decoder.colorProfile
        ).finished(with: options, deadline: deadline)
    }

    /// Frame delays as browsers play them: 10 ms or less shows for 100 ms.
    static func duration(_ frame: APNGAnimation.Frame) -> TimeInterval {
        let seconds = Double(frame.delayNumerator) / Double(frame.delayDenominator)
        return seconds <= 0.010 ? 0.1 : seconds
    }
}

/// Composes APNG frames on a canvas one at a time: each frame is decoded by libpng as a
/// standalone PNG, then blended (source or over) onto the canvas, and disposed of (none,
/// background, previous) before the next one, as the APNG spec says. Holds the canvas and, for
/// a frame disposed to the previous state, the area it covers. Not thread-safe.
final class APNGFrameDecoder: AnimationFrameDecoder {
    let animation: APNGAnimation
    let data: Data
    let options: ImageDecodingOptions
    private(set) var position = 0
    /// The iCCP profile, once the first frame is decoded (unless the options ignore profiles).
    private(set) var colorProfile: ColorProfile?
    private var canvas: Bitmap
    /// The last frame's disposal, done before the next frame is drawn: its area cleared, or
    /// given back what it covered.
    private var disposal: (rect: PixelRect, covered: Bitmap?)?
    /// The frames that need no earlier one (``keyFrames(of:)``), ascending, 0 first.
    private lazy var keyFrames = Self.keyFrames(of: animation)

    /// - Throws: `limitExceeded` for a canvas over the pixel limit, `truncatedData` without an
    ///   IEND chunk, `corruptData` without frame data.
    init(animation: APNGAnimation, data: Data, options: ImageDecodingOptions) throws(CoderError) {
        try options.checkPixelLimit(animation.canvas, format: .png)
        guard animation.sawEnd else { throw .truncatedData(.png, "the animation ends before its IEND chunk") }
        guard !animation.frames.isEmpty else { throw .corruptData(.png, "the APNG has no frame data") }
        self.animation = animation
        self.data = data
        self.options = options
        canvas = Bitmap(width: animation.canvas.width, height: animation.canvas.height)
    }

    /// The frame decoder of an APNG file.
    /// - Throws: `corruptData` when `data` is no APNG, and as ``init(animation:data:options:)``.
    convenience init(data: Data, options: ImageDecodingOptions) throws(CoderError) {
        let animation: APNGAnimation? = try data.withBytes { (bytes) throws(CoderError) in
            try APNGAnimation(parsing: bytes)
        }
        guard let animation else { throw .corruptData(.png, "the PNG is not animated (no acTL chunk before IDAT)") }
        try self.init(animation: animation, data: data, options: options)
    }

    /// What the chunks say: canvas, durations, play count, alpha.
    static func info(of data: Data, options: ImageDecodingOptions) throws(CoderError) -> AnimationInfo {
        let decoder = try APNGFrameDecoder(data: data, options: options)
        let animation = decoder.animation
        return AnimationInfo(
            format: .png,
            canvasSize: animation.canvas,
            durations: animation.frames.map(APNGDecoder.duration),
            loopCount: animation.playCount,
            mayHaveAlpha: animation.hasAlpha,
            orientation: .up
        )
    }

    func nextCanvas(within deadline: CodingDeadline) throws(CoderError) -> Bitmap? {
        guard position < animation.frames.count else { return nil }
        let frame = animation.frames[position]
        guard frame.rect.width > 0, frame.rect.height > 0, frame.rect.clipped(to: animation.canvas) == frame.rect else {
            throw .corruptData(.png, "frame \(position) (\(frame.rect)) lies outside the \(animation.canvas) canvas")
        }
        try deadline.check(.png)
        // Frames are composed in the file's colour space; the policy converts each one after.
        let bitmap = try PNGCoder.decodeStill(
            frameStream(for: frame),
            options: options,
            deadline: deadline,
            profile: &colorProfile
        )
        if let last = disposal {
            if let covered = last.covered {
                canvas.draw(covered, atX: last.rect.x, y: last.rect.y, blend: false)
            } else {
                canvas.clear(last.rect)
            }
            disposal = nil
        }
        let dispose: APNGAnimation.Dispose = position == 0 && frame.dispose == .previous ? .background : frame.dispose
        switch dispose {
        case .none: break
        case .background: disposal = (frame.rect, nil)
        case .previous: disposal = (frame.rect, canvas.cropped(to: frame.rect))
        }
        canvas.draw(bitmap, atX: frame.rect.x, y: frame.rect.y, blend: frame.blendOver && position > 0)
        position += 1
        return canvas
    }

    func rewind() throws(CoderError) {
        position = 0
        disposal = nil
        canvas = Bitmap(width: animation.canvas.width, height: animation.canvas.height)
    }

    /// Jumps to the last key frame at or before `index`, on a cleared canvas; `false` (no jump)
    /// when the decoder is already between that key frame and `index`.
    func skip(to index: Int) -> Bool {
        guard animation.frames.indices.contains(index), let key = keyFrames.last(where: { $0 <= index }) else {
            return false
        }
        if position <= index, key <= position { return false }
        try? rewind()
        position = key
        return true
    }

    /// The frames whose composed canvas does not depend on the earlier ones, from the frame
    /// control chunks alone: the first; one that paints the whole canvas with `source` blending
    /// and does not restore the canvas after it (its successor would see an earlier frame); and
    /// one drawn after a frame that covered the whole canvas was disposed to the background
    /// (a cleared canvas is where a decode starts).
    static func keyFrames(of animation: APNGAnimation) -> [Int] {
        let whole = PixelRect(x: 0, y: 0, width: animation.canvas.width, height: animation.canvas.height)
        var keys = [0]
        for index in animation.frames.indices.dropFirst() {
            let frame = animation.frames[index]
            let previous = animation.frames[index - 1]
            let paintsAll = frame.rect == whole && !frame.blendOver && frame.dispose != .previous
            // The first frame's "previous" disposal is the background's (the APNG spec).
            let previousClears = previous.dispose == .background || (index == 1 && previous.dispose == .previous)
            if paintsAll || (previous.rect == whole && previousClears) { keys.append(index) }
        }
        return keys
    }

    /// A standalone PNG holding just this frame: IHDR with the frame's size, PLTE/tRNS, IDAT, IEND.
    private func frameStream(for frame: APNGAnimation.Frame) -> Data {
        data.withUnsafeBytes { bytes in
            var writer = PNGStreamWriter()
            var header = Array(bytes[animation.header])
            withUnsafeBytes(of: UInt32(frame.rect.width).bigEndian) { header.replaceSubrange(0..<4, with: $0) }
            withUnsafeBytes(of: UInt32(frame.rect.height).bigEndian) { header.replaceSubrange(4..<8, with: $0) }
            writer.append(type: "IHDR", payload: header)
            for chunk in animation.sharedChunks {
                writer.append(type: chunk.type, payload: UnsafeRawBufferPointer(rebasing: bytes[chunk.payload]))
            }
            for range in frame.dataRanges {
                writer.append(type: "IDAT", payload: UnsafeRawBufferPointer(rebasing: bytes[range]))
            }
            writer.append(type: "IEND", payload: [])
            return writer.data
        }
    }
}
