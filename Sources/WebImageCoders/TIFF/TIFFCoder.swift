import CWebImageShims
import Foundation

/// TIFF through libtiff: decodes the first image (any layout libtiff's RGBA reader handles:
/// strips or tiles, 1 to 16 bits, palette, grey, RGB, CMYK, YCbCr, with their compressions);
/// encodes 8-bit RGB or RGBA (straight alpha), deflate-compressed. No colour profile is read or
/// written yet.
public struct TIFFCoder: ImageCoding {
    public init() {}

    public func canDecode(_ details: ImageFormatDetails) -> Bool { details.format == .tiff }

    public func decode(_ data: Data, options: ImageDecodingOptions) throws(CoderError) -> DecodedImage {
        guard !data.isEmpty else { throw .emptyData }
        let deadline = CodingDeadline(options)
        var width: UInt32 = 0
        var height: UInt32 = 0
        var pixels: UnsafeMutablePointer<UInt8>?
        var hasAlpha: Int32 = 0
        var message = [CChar](repeating: 0, count: Int(WI_MESSAGE_CAPACITY))
        let status = data.withUnsafeBytes { bytes in
            wi_tiff_decode(
                bytes.baseAddress?.assumingMemoryBound(to: UInt8.self),
                bytes.count,
                UInt64(max(0, options.maxPixelCount)),
                deadline.cancellation?.flag,
                deadline.remainingNanoseconds,
                &width,
                &height,
                &pixels,
                &hasAlpha,
                &message
            )
        }
        let detail = ShimResult.message(message)
        if status == WI_LIMIT_EXCEEDED { throw .limitExceeded(.tiff, detail) }
        if status == WI_OUT_OF_MEMORY { throw .outOfMemory(.tiff, detail) }
        guard status == WI_OK, let pixels, width > 0, height > 0 else {
            throw .corruptData(.tiff, detail.isEmpty ? "libtiff could not read it" : detail)
        }
        defer { free(pixels) }
        let count = Int(width) * Int(height) * 4
        let bitmap = Bitmap(
            width: Int(width),
            height: Int(height),
            hasAlpha: hasAlpha != 0,
            pixels: [UInt8](UnsafeBufferPointer(start: pixels, count: count))
        )
        return try DecodedImage(frames: [DecodedImage.Frame(bitmap: bitmap)], format: .tiff)
            .finished(with: options, deadline: deadline)
    }

    public func canEncode(_ format: ImageFormat) -> Bool { format == .tiff }

    /// The first frame: RGB, or RGBA when it has any transparency.
    public func encode(
        _ image: DecodedImage,
        as format: ImageFormat,
        options: ImageEncodingOptions
    ) throws(CoderError)
        -> Data
    {
        guard format == .tiff else { throw .unsupportedFormat(format) }
        let bitmap = image.bitmap
        let deadline = CodingDeadline(options)
        let alpha = bitmap.hasAlpha && bitmap.containsTransparency
        var output: UnsafeMutablePointer<UInt8>?
        var size = 0
        var message = [CChar](repeating: 0, count: Int(WI_MESSAGE_CAPACITY))
        let status = bitmap.pixels.withUnsafeBufferPointer { pixels in
            wi_tiff_encode(
                pixels.baseAddress,
                UInt32(bitmap.width),
                UInt32(bitmap.height),
                bitmap.bytesPerRow,
                alpha ? 1 : 0,
                deadline.cancellation?.flag,
                deadline.remainingNanoseconds,
                &output,
                &size,
                &message
            )
        }
        return try ShimResult.encoded(status, output: output, size: size, message: message, format: .tiff)
    }
}
