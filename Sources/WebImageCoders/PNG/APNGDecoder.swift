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

/// Composes APNG frames on a canvas: each frame is decoded by libpng as a standalone PNG, then
/// blended (source or over) and disposed (none, background, previous) as the APNG spec says.
struct APNGDecoder {
    let animation: APNGAnimation
    let data: Data
    let options: ImageDecodingOptions
    let deadline: CodingDeadline

    func decode() throws(CoderError) -> DecodedImage {
        let canvasSize = animation.canvas
        try options.checkPixelLimit(canvasSize, format: .png)
        guard animation.sawEnd else { throw .truncatedData(.png, "the animation ends before its IEND chunk") }
        guard !animation.frames.isEmpty else { throw .corruptData(.png, "the APNG has no frame data") }
        let frameLimit = options.firstFrameOnly ? 1 : animation.frames.count
        try options.checkAnimationLimits(frameCount: frameLimit, canvas: canvasSize, format: .png)

        var canvas = Bitmap(width: canvasSize.width, height: canvasSize.height)
        var output: [DecodedImage.Frame] = []
        var hasTransparency = animation.hasAlpha
        var profile: ColorProfile?
        for (index, frame) in animation.frames.prefix(frameLimit).enumerated() {
            guard frame.rect.width > 0, frame.rect.height > 0,
                frame.rect.clipped(to: canvasSize) == frame.rect
            else {
                throw .corruptData(.png, "frame \(index) (\(frame.rect)) lies outside the \(canvasSize) canvas")
            }
            try deadline.check(.png)
            // Frames are composed in the file's colour space; the policy converts each one after.
            let bitmap = try PNGCoder.decodeStill(
                frameStream(for: frame),
                options: options,
                deadline: deadline,
                profile: &profile
            )
            let dispose: APNGAnimation.Dispose = index == 0 && frame.dispose == .previous ? .background : frame.dispose
            let saved = dispose == .previous ? canvas.cropped(to: frame.rect) : nil
            canvas.draw(bitmap, atX: frame.rect.x, y: frame.rect.y, blend: frame.blendOver && index > 0)
            hasTransparency = hasTransparency || canvas.containsTransparency
            output.append(.init(bitmap: canvas, duration: Self.duration(frame)))
            switch dispose {
            case .none: break
            case .background: canvas.clear(frame.rect)
            case .previous: canvas.draw(saved!, atX: frame.rect.x, y: frame.rect.y, blend: false)
            }
        }
        for index in output.indices { output[index].bitmap.hasAlpha = hasTransparency }
        return try DecodedImage(
            frames: output,
            loopCount: animation.playCount,
            format: .png,
            sourceSize: canvasSize,
            sourceFrameCount: animation.frames.count,
            colorProfile: profile
        ).finished(with: options, deadline: deadline)
    }

    /// Frame delays as browsers play them: 10 ms or less shows for 100 ms.
    static func duration(_ frame: APNGAnimation.Frame) -> TimeInterval {
        let seconds = Double(frame.delayNumerator) / Double(frame.delayDenominator)
        return seconds <= 0.010 ? 0.1 : seconds
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
