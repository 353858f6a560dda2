import Foundation
import WebImageCoders

/// Picks and writes a `best` result (``BestFormatSettings``): lossless for flat images, else
/// the smaller of the two most efficient lossy candidates.
struct BestFormatChooser {
    let settings: BestFormatSettings
    let candidates: [ImageFormat]
    /// Encoding options at `format`'s quality (the URL's, the format's default or the server's).
    let options: @Sendable (ImageFormat) -> ImageEncodingOptions
    /// The autoquality search for `format`, when on.
    let autoQuality: @Sendable (ImageFormat) throws(ProxyError) -> AutoQuality?

    /// Lossy formats, most efficient first.
    static let lossyOrder: [ImageFormat] = [.avif, .jxl, .webp, .jpeg]
    /// Formats that write losslessly, smallest first in the usual case.
    static let losslessOrder: [ImageFormat] = [.jxl, .webp, .png]

    /// How busy the image is: ten times the mean, over the first frame's pixels, of the smaller
    /// of the horizontal and vertical luma step (0–255). Flat fills and straight edges count 0,
    /// so diagrams and logos score about 0–2 and photos about 15–45 (measured on the corpus's
    /// photos at 400 px); imgproxy's default threshold, 5.5, falls between.
    static func complexity(of bitmap: Bitmap) -> Double {
        guard bitmap.width > 1, bitmap.height > 1 else { return 0 }
        var total = 0
        bitmap.pixels.withUnsafeBufferPointer { pixels in
            func luma(_ offset: Int) -> Int {
                (Int(pixels[offset]) * 77 + Int(pixels[offset + 1]) * 150 + Int(pixels[offset + 2]) * 29) >> 8
            }
            for y in 1..<bitmap.height {
                var offset = y * bitmap.bytesPerRow + 4
                for _ in 1..<bitmap.width {
                    let here = luma(offset)
                    total += min(abs(here - luma(offset - 4)), abs(here - luma(offset - bitmap.bytesPerRow)))
                    offset += 4
                }
            }
        }
        return 10 * Double(total) / Double((bitmap.width - 1) * (bitmap.height - 1))
    }

    /// The chosen format and its bytes.
    /// - Throws: the encoders' errors; 400 from an autoquality that cannot apply.
    func write(_ image: DecodedImage) throws -> (data: Data, format: ImageFormat) {
        let transparent = image.frames.contains { $0.bitmap.hasAlpha && $0.bitmap.containsTransparency }
        let allowed = candidates.filter { !(transparent && $0 == .jpeg) }
        if settings.complexityThreshold > 0, Self.complexity(of: image.bitmap) < settings.complexityThreshold {
            let lossless = Self.losslessOrder.filter(allowed.contains)
            if !lossless.isEmpty { return try smallest(image, lossless, lossless: true) }
        }
        var lossy = Self.lossyOrder.filter(allowed.contains)
        if lossy.isEmpty {
            return try smallest(image, [allowed.contains(.png) || allowed.isEmpty ? .png : allowed[0]], lossless: false)
        }
        let megapixels = Double(image.width * image.height) / 1_000_000
        lossy = Array(lossy.prefix(settings.maxResolution > 0 && megapixels > settings.maxResolution ? 1 : 2))
        return try smallest(image, lossy, lossless: false)
    }

    /// Each format's encoding, the smallest kept.
    private func smallest(
        _ image: DecodedImage,
        _ formats: [ImageFormat],
        lossless: Bool
    ) throws
        -> (data: Data, format: ImageFormat)
    {
        var best: (data: Data, format: ImageFormat)?
        for format in formats {
            var encoding = options(format)
            let data: Data
            if lossless {
                encoding.lossless = true
                encoding.quality = 1
                data = try ImageCodersManager.shared.encode(image, as: format, options: encoding)
            } else if let autoQuality = try autoQuality(format) {
                data = try ImageCodersManager.shared.encode(
                    image,
                    as: format,
                    options: encoding,
                    autoQuality: autoQuality
                ).data
            } else {
                data = try ImageCodersManager.shared.encode(image, as: format, options: encoding)
            }
            if best == nil || data.count < best!.data.count { best = (data, format) }
        }
        return best!
    }
}
