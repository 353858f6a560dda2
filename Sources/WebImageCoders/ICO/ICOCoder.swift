import Foundation

/// ICO (and CUR): decodes the largest entry of the icon directory, a PNG or a bitmap with its
/// AND mask; encodes one PNG entry, as libvips's saver for imgproxy does (at most 256×256).
public struct ICOCoder: ImageCoding {
    /// The largest side an icon entry can have.
    public static let maximumSide = 256

    public init() {}

    public func canDecode(_ details: ImageFormatDetails) -> Bool { details.format == .ico }

    public func decode(_ data: Data, options: ImageDecodingOptions) throws(CoderError) -> DecodedImage {
        guard !data.isEmpty else { throw .emptyData }
        let deadline = CodingDeadline(options)
        let entry = try Self.largestEntry(data)
        let slice = data.subdata(in: entry.offset..<entry.offset + entry.size)
        if slice.starts(with: [0x89, 0x50, 0x4E, 0x47]) {
            var decoded = try PNGCoder().decode(slice, options: options)
            decoded.format = .ico
            return decoded
        }
        let read: Result<Bitmap, CoderError> = slice.withUnsafeBytes { bytes in
            Result { () throws(CoderError) -> Bitmap in
                let dib = try DIB(bytes, header: 0, format: .ico, icon: true)
                try options.checkPixelLimit(PixelSize(width: dib.width, height: dib.height), format: .ico)
                return try dib.pixels(bytes, at: dib.paletteEnd, andMask: true, deadline: deadline)
            }
        }
        let bitmap = try read.get()
        return try DecodedImage(frames: [DecodedImage.Frame(bitmap: bitmap)], format: .ico)
            .finished(with: options, deadline: deadline)
    }

    /// The directory entry with the most pixels (then bits), its data checked to be inside.
    private static func largestEntry(_ data: Data) throws(CoderError) -> (offset: Int, size: Int) {
        let bytes = [UInt8](data.prefix(6 + 16 * 256))
        guard bytes.count >= 6, bytes[0] == 0, bytes[1] == 0, bytes[2] == 1 || bytes[2] == 2 else {
            throw .corruptData(.ico, "no icon directory")
        }
        let count = Int(bytes[4]) | Int(bytes[5]) << 8
        guard count > 0 else { throw .corruptData(.ico, "the icon directory is empty") }
        var best: (pixels: Int, bits: Int, offset: Int, size: Int)?
        for index in 0..<count {
            let entry = 6 + index * 16
            guard entry + 16 <= bytes.count else { break }
            func u32(_ at: Int) -> Int {
                Int(bytes[at]) | Int(bytes[at + 1]) << 8 | Int(bytes[at + 2]) << 16 | Int(bytes[at + 3]) << 24
            }
            let width = bytes[entry] == 0 ? 256 : Int(bytes[entry])
            let height = bytes[entry + 1] == 0 ? 256 : Int(bytes[entry + 1])
            let bits = Int(bytes[entry + 6]) | Int(bytes[entry + 7]) << 8
            let size = u32(entry + 8)
            let offset = u32(entry + 12)
            guard size > 0, offset >= 6, offset <= data.count, size <= data.count - offset else { continue }
            let candidate = (width * height, bits, offset, size)
            if best.map({ candidate.0 > $0.pixels || (candidate.0 == $0.pixels && candidate.1 > $0.bits) }) ?? true {
                best = candidate
            }
        }
        guard let best else { throw .truncatedData(.ico, "no icon entry lies inside the data") }
        return (best.offset, best.size)
    }

    public func canEncode(_ format: ImageFormat) -> Bool { format == .ico }

    /// The first frame as one PNG entry.
    /// - Throws: ``CoderError/limitExceeded(_:_:)`` for an image over 256 pixels on a side.
    public func encode(
        _ image: DecodedImage,
        as format: ImageFormat,
        options: ImageEncodingOptions
    ) throws(CoderError)
        -> Data
    {
        guard format == .ico else { throw .unsupportedFormat(format) }
        let bitmap = image.bitmap
        guard bitmap.width <= Self.maximumSide, bitmap.height <= Self.maximumSide else {
            throw .limitExceeded(.ico, "\(bitmap.width)×\(bitmap.height) is over ICO's 256×256")
        }
        var still = image
        still.frames = [DecodedImage.Frame(bitmap: bitmap)]
        let png = try PNGCoder().encode(still, as: .png, options: options)
        var data = Data([0, 0, 1, 0, 1, 0])
        data.append(UInt8(bitmap.width % 256))
        data.append(UInt8(bitmap.height % 256))
        data.append(contentsOf: [0, 0])
        data.appendLittleEndian(UInt16(1))
        data.appendLittleEndian(UInt16(32))
        data.appendLittleEndian(UInt32(png.count))
        data.appendLittleEndian(UInt32(22))
        data.append(png)
        return data
    }
}
