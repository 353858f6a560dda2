import Foundation

/// Writes an animation as APNG: each frame a full-canvas PNG from libpng, its image data moved
/// into the animation's chunks (`acTL`, then `fcTL` + `IDAT` for the first frame and `fcTL` +
/// `fdAT` for the rest). Every frame replaces the canvas (dispose none, blend source), so what
/// a viewer shows is exactly each decoded frame.
enum APNGEncoder {
    /// - Parameter encodeFrame: encodes one frame as a still PNG (the first, `true`, with the
    ///   image's iCCP and eXIf chunks, which are copied); every frame must get the same colour type
    ///   (the caller passes the same alpha decision for all).
    static func encode(
        _ image: DecodedImage,
        encodeFrame: (Bitmap, _ isFirst: Bool) throws(CoderError) -> Data
    ) throws(CoderError) -> Data {
        let frames = image.frames
        guard let first = frames.first else { throw .encodingFailed(.png, "the animation has no frames") }
        guard frames.allSatisfy({ $0.bitmap.width == first.bitmap.width && $0.bitmap.height == first.bitmap.height })
        else { throw .encodingFailed(.png, "APNG frames must all be \(first.bitmap.width)×\(first.bitmap.height)") }
        var writer = PNGStreamWriter()
        var sequence: UInt32 = 0
        for (index, frame) in frames.enumerated() {
            let still = try encodeFrame(frame.bitmap, index == 0)
            let (header, metadata, imageData) = try chunks(of: still)
            if index == 0 {
                writer.append(type: "IHDR", payload: header)
                for (type, payload) in metadata { writer.append(type: type, payload: payload) }
                writer.append(
                    type: "acTL",
                    payload: bigEndian(UInt32(frames.count)) + bigEndian(UInt32(image.loopCount))
                )
            }
            writer.append(type: "fcTL", payload: frameControl(frame, sequence: sequence))
            sequence += 1
            for payload in imageData {
                if index == 0 {
                    writer.append(type: "IDAT", payload: payload)
                } else {
                    writer.append(type: "fdAT", payload: bigEndian(sequence) + payload)
                    sequence += 1
                }
            }
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
