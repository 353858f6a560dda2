import Foundation

/// BMP: decodes 1, 4 and 8-bit palette bitmaps, 16 and 32-bit ones with or without bit-field
/// masks and 24-bit ones (bottom-up or top-down; RLE refused); encodes 24-bit bitmaps, or
/// 32-bit ones with an alpha mask (a `BITMAPV4HEADER`) for images with transparency. Still
/// images only; no colour profile is read or written.
public struct BMPCoder: ImageCoding {
    public init() {}

    public func canDecode(_ details: ImageFormatDetails) -> Bool { details.format == .bmp }

    public func decode(_ data: Data, options: ImageDecodingOptions) throws(CoderError) -> DecodedImage {
        guard !data.isEmpty else { throw .emptyData }
        let deadline = CodingDeadline(options)
        let read: Result<Bitmap, CoderError> = data.withUnsafeBytes { bytes in
            Result { () throws(CoderError) -> Bitmap in
                guard bytes.count >= 26, bytes[0] == 0x42, bytes[1] == 0x4D else {
                    throw .truncatedData(.bmp, "no BMP file header")
                }
                let offset = Int(bytes[10]) | Int(bytes[11]) << 8 | Int(bytes[12]) << 16 | Int(bytes[13]) << 24
                let dib = try DIB(bytes, header: 14, format: .bmp, icon: false, pixelsStart: offset)
                try options.checkPixelLimit(PixelSize(width: dib.width, height: dib.height), format: .bmp)
                return try dib.pixels(bytes, at: offset, andMask: false, deadline: deadline)
            }
        }
        let bitmap = try read.get()
        return try DecodedImage(frames: [DecodedImage.Frame(bitmap: bitmap)], format: .bmp)
            .finished(with: options, deadline: deadline)
    }

    public func canEncode(_ format: ImageFormat) -> Bool { format == .bmp }

    /// The first frame, bottom-up: 24 bits per pixel, or 32 with alpha when the image has any
    /// transparency. Of `options`, only the cancellation and time limit are read (BMP has no
    /// quality); either stops the encode before it starts.
    public func encode(
        _ image: DecodedImage,
        as format: ImageFormat,
        options: ImageEncodingOptions
    ) throws(CoderError)
        -> Data
    {
        guard format == .bmp else { throw .unsupportedFormat(format) }
        // One pass of copies: a cancellation is honoured before it, not inside.
        try CodingDeadline(options).check(.bmp, "encoding")
        return Self.bitmapFile(image.bitmap)
    }

    static func bitmapFile(_ bitmap: Bitmap) -> Data {
        let alpha = bitmap.hasAlpha && bitmap.containsTransparency
        let pixels = dibPixels(bitmap, alpha: alpha, bottomUp: true)
        let headerSize = alpha ? 108 : 40
        let offset = 14 + headerSize
        var data = Data(capacity: offset + pixels.count)
        data.append(contentsOf: [0x42, 0x4D])
        data.appendLittleEndian(UInt32(offset + pixels.count))
        data.appendLittleEndian(UInt32(0))
        data.appendLittleEndian(UInt32(offset))
        data.append(infoHeader(bitmap, alpha: alpha, size: headerSize, heightFactor: 1, imageBytes: pixels.count))
        data.append(contentsOf: pixels)
        return data
    }

    /// A `BITMAPINFOHEADER` (40 bytes), or a `BITMAPV4HEADER` (108) with bit fields and an
    /// alpha mask, sRGB.
    static func infoHeader(_ bitmap: Bitmap, alpha: Bool, size: Int, heightFactor: Int, imageBytes: Int) -> Data {
        var header = Data(capacity: size)
        header.appendLittleEndian(UInt32(size))
        header.appendLittleEndian(UInt32(bitmap.width))
        header.appendLittleEndian(UInt32(bitmap.height * heightFactor))
        header.appendLittleEndian(UInt16(1))
        header.appendLittleEndian(UInt16(alpha ? 32 : 24))
        header.appendLittleEndian(UInt32(size == 108 ? 3 : 0))  // BI_BITFIELDS or BI_RGB
        header.appendLittleEndian(UInt32(imageBytes))
        header.appendLittleEndian(UInt32(2835))  // 72 dpi
        header.appendLittleEndian(UInt32(2835))
        header.appendLittleEndian(UInt32(0))
        header.appendLittleEndian(UInt32(0))
        if size == 108 {
            for mask: UInt32 in [0x00FF_0000, 0x0000_FF00, 0x0000_00FF, 0xFF00_0000] { header.appendLittleEndian(mask) }
            header.append(contentsOf: Array("BGRs".utf8))  // LCS_sRGB, stored little-endian
            header.append(Data(count: 48))  // end points and gammas, unused with sRGB
        }
        return header
    }

    /// Rows of BGR (or BGRA) padded to 4 bytes.
    static func dibPixels(_ bitmap: Bitmap, alpha: Bool, bottomUp: Bool) -> [UInt8] {
        let channels = alpha ? 4 : 3
        let rowBytes = ((bitmap.width * channels * 8 + 31) / 32) * 4
        var out = [UInt8](repeating: 0, count: rowBytes * bitmap.height)
        for y in 0..<bitmap.height {
            let row = (bottomUp ? bitmap.height - 1 - y : y) * rowBytes
            for x in 0..<bitmap.width {
                let source = y * bitmap.bytesPerRow + x * 4
                let target = row + x * channels
                out[target] = bitmap.pixels[source + 2]
                out[target + 1] = bitmap.pixels[source + 1]
                out[target + 2] = bitmap.pixels[source]
                if alpha { out[target + 3] = bitmap.pixels[source + 3] }
            }
        }
        return out
    }
}

extension Data {
    mutating func appendLittleEndian<Value: FixedWidthInteger>(_ value: Value) {
        Swift.withUnsafeBytes(of: value.littleEndian) { append(contentsOf: $0) }
    }
}
