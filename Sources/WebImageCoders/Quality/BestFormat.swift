import Foundation

/// Writes an image in whichever of some candidate formats gives the fewest bytes (imgproxy
/// Pro's `format:best`): flat images (``complexity(of:)`` under ``complexityThreshold``)
/// losslessly in the smallest of JPEG XL, WebP and PNG among the candidates; others lossy,
/// trying the ``lossyTrials`` most efficient candidates (AVIF, JPEG XL, WebP, JPEG, in that
/// order) each at its own quality or autoquality, and keeping the smallest (a later candidate's
/// quality search stops as soon as it shows it cannot be smaller). JPEG is left out for images
/// with transparency. Runs on the calling thread.
public struct BestFormat: Sendable {
    /// The formats the result may be written in.
    public var candidates: [ImageFormat]
    /// Below this complexity the result is lossless; 0: never. Default 5.5 (imgproxy's).
    public var complexityThreshold: Double
    /// How many lossy candidates are encoded, most efficient first. Default 2.
    public var lossyTrials: Int
    /// The options a candidate is encoded with (its quality, speed, cancellation).
    public var options: @Sendable (ImageFormat) -> ImageEncodingOptions
    /// The quality search for a candidate, `nil` for its fixed quality.
    public var autoQuality: @Sendable (ImageFormat) -> AutoQuality?

    public init(
        candidates: [ImageFormat],
        complexityThreshold: Double = 5.5,
        lossyTrials: Int = 2,
        options: @escaping @Sendable (ImageFormat) -> ImageEncodingOptions,
        autoQuality: @escaping @Sendable (ImageFormat) -> AutoQuality? = { _ in nil }
    ) {
        self.candidates = candidates
        self.complexityThreshold = complexityThreshold
        self.lossyTrials = max(1, lossyTrials)
        self.options = options
        self.autoQuality = autoQuality
    }

    /// Lossy formats, most efficient first.
    public static let lossyOrder: [ImageFormat] = [.avif, .jxl, .webp, .jpeg]
    /// Formats that write losslessly, smallest first in the usual case.
    public static let losslessOrder: [ImageFormat] = [.jxl, .webp, .png]

    /// How busy the image is: ten times the mean, over the first frame's pixels, of the smaller
    /// of the horizontal and vertical luma step (0–255). Flat fills and straight edges count 0,
    /// so diagrams and logos score about 0–2 and photos about 15–45 (measured on the corpus's
    /// photos at 400 px); imgproxy's default threshold, 5.5, falls between.
    public static func complexity(of bitmap: Bitmap) -> Double {
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
    /// - Throws: the encoders' ``CoderError``s (`limitExceeded` when cancelled).
    public func encode(_ image: DecodedImage) throws(CoderError) -> (data: Data, format: ImageFormat) {
        let transparent = image.frames.contains { $0.bitmap.hasAlpha && $0.bitmap.containsTransparency }
        let allowed = candidates.filter { !(transparent && $0 == .jpeg) }
        if complexityThreshold > 0, Self.complexity(of: image.bitmap) < complexityThreshold {
            let lossless = Self.losslessOrder.filter(allowed.contains)
            if !lossless.isEmpty { return try smallest(image, lossless, lossless: true) }
        }
        let lossy = Self.lossyOrder.filter(allowed.contains)
        guard !lossy.isEmpty else {
            return try smallest(image, [allowed.contains(.png) || allowed.isEmpty ? .png : allowed[0]], lossless: false)
        }
        return try smallest(image, Array(lossy.prefix(lossyTrials)), lossless: false)
    }

    /// Each format's encoding, the smallest kept.
    private func smallest(
        _ image: DecodedImage,
        _ formats: [ImageFormat],
        lossless: Bool
    ) throws(CoderError)
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
            } else if let search = autoQuality(format) {
                // A format whose search shows it cannot beat the smallest so far stops early.
                guard
                    let result = try ImageCodersManager.shared.encode(
                        image,
                        as: format,
                        options: encoding,
                        autoQuality: search,
                        unlessLargerThan: best?.data.count
                    )
                else { continue }
                data = result.data
            } else {
                data = try ImageCodersManager.shared.encode(image, as: format, options: encoding)
            }
            if let kept = best, kept.data.count <= data.count { continue }
            best = (data, format)
        }
        guard let best else { throw .invalidArgument("best format: no candidate format to write") }
        return best
    }
}
