import Foundation

/// Writes an animation as APNG a frame at a time: each frame a full-canvas PNG from libpng, its
/// image data moved into the animation's chunks (`acTL`, then `fcTL` + `IDAT` for the first
/// frame and `fcTL` + `fdAT` for the rest) as it is added, so only the file so far is held.
/// Every frame replaces the canvas (dispose none, blend source), so what a viewer shows is
/// exactly each frame. `acTL` names the frame count first: exactly that many must be added.
/// Not thread-safe: one owner adds the frames in order.
final class APNGEncoder {
    /// Encodes one frame as a still PNG (the first, `true`, with the image's iCCP and eXIf
    /// chunks, which are copied); every frame must get the same colour type.
    typealias FrameEncoder = (Bitmap, _ isFirst: Bool) throws(CoderError) -> Data

    private let size: PixelSize
    private let frameCount: Int
    private let loopCount: Int
    private let encodeFrame: FrameEncoder
    private var writer = PNGStreamWriter()
    private var sequence: UInt32 = 0
    private var added = 0

    /// A writer of `frameCount` frames of `size` that play `loopCount` times (0: forever).
    init(size: PixelSize, frameCount: Int, loopCount: Int, encodeFrame: @escaping FrameEncoder) {
        self.size = size
        self.frameCount = frameCount
        self.loopCount = loopCount
        self.encodeFrame = encodeFrame
    }

    /// The whole animation at once (the caller passes the same alpha decision for all frames).
    static func encode(_ image: DecodedImage, encodeFrame: @escaping FrameEncoder) throws(CoderError) -> Data {
        guard let first = image.frames.first else { throw .encodingFailed(.png, "the animation has no frames") }
        let encoder = APNGEncoder(
            size: PixelSize(width: first.bitmap.width, height: first.bitmap.height),
            frameCount: image.frames.count,
            loopCount: image.loopCount,
            encodeFrame: encodeFrame
        )
        for frame in image.frames { try encoder.add(frame) }
        return try encoder.finish()
    }

    /// Encodes the next frame and appends its chunks.
    /// - Throws: `encodingFailed` for a frame of another size or one past the count;
    ///   the frame encoder's errors.
    func add(_ frame: DecodedImage.Frame) throws(CoderError) {
        try frame.checkSize(size, number: added + 1, format: .png)
        guard added < frameCount else {
            throw .encodingFailed(.png, "frame \(added + 1) is past the \(frameCount) the APNG declares")
        }
        let still = try encodeFrame(frame.bitmap, added == 0)
        let (header, metadata, imageData) = try Self.chunks(of: still)
        if added == 0 {
            writer.append(type: "IHDR", payload: header)
            for (type, payload) in metadata { writer.append(type: type, payload: payload) }
            writer.append(type: "acTL", payload: Self.bigEndian(UInt32(frameCount)) + Self.bigEndian(UInt32(loopCount)))
        }
        writer.append(type: "fcTL", payload: Self.frameControl(frame, sequence: sequence))
        sequence += 1
        for payload in imageData {
            if added == 0 {
                writer.append(type: "IDAT", payload: payload)
            } else {
                writer.append(type: "fdAT", payload: Self.bigEndian(sequence) + payload)
                sequence += 1
            }
        }
        added += 1
    }

    /// The file, once the declared number of frames is added.
    /// - Throws: `encodingFailed` when fewer frames were added than declared.
    func finish() throws(CoderError) -> Data {
        guard added == frameCount, added > 0 else {
            throw .encodingFailed(.png, "the APNG declares \(frameCount) frames and \(added) were added")
        }
        writer.append(type: "IEND", payload: [])
        return writer.data
    }

    /// The IHDR payload, the iCCP and eXIf chunks and the IDAT payloads of a still PNG libpng wrote.
    private static func chunks(
        of png: Data
    ) throws(CoderError) -> (header: [UInt8], metadata: [(String, [UInt8])], imageData: [[UInt8]]) {
        png.withUnsafeBytes { bytes in
            var header: [UInt8] = []
            var metadata: [(String, [UInt8])] = []
            var imageData: [[UInt8]] = []
            for chunk in PNGChunkSequence(bytes: bytes) {
                switch chunk.type {
                case "IHDR": header = Array(bytes[chunk.payload])
                case "iCCP", "eXIf": metadata.append((chunk.type, Array(bytes[chunk.payload])))
                case "IDAT": imageData.append(Array(bytes[chunk.payload]))
                default: continue
                }
            }
            return (header, metadata, imageData)
        }
    }

    /// `fcTL`: the whole canvas, the frame's delay in milliseconds (centiseconds past 65.5 s).
    private static func frameControl(_ frame: DecodedImage.Frame, sequence: UInt32) -> [UInt8] {
        let milliseconds = (max(0, frame.duration) * 1000).rounded()
        let (numerator, denominator): (UInt16, UInt16) =
            milliseconds <= Double(UInt16.max)
            ? (UInt16(milliseconds), 1000) : (UInt16(clamping: Int((max(0, frame.duration) * 100).rounded())), 100)
        return bigEndian(sequence) + bigEndian(UInt32(frame.bitmap.width)) + bigEndian(UInt32(frame.bitmap.height))
            + bigEndian(UInt32(0)) + bigEndian(UInt32(0)) + bigEndian(numerator) + bigEndian(denominator)
            + [0, 0]  // dispose op none, blend op source
    }

    private static func bigEndian<Value: FixedWidthInteger>(_ value: Value) -> [UInt8] {
        withUnsafeBytes(of: value.bigEndian) { Array($0) }
    }
}
