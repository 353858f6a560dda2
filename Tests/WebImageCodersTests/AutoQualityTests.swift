import Foundation
import Testing
import WebImageTestSupport

@testable import WebImageCoders

@Suite("Image differences and autoquality")
struct AutoQualityTests {
    static let photo = GeneratedImages.photoLike(width: 320, height: 240, detail: 0.2)

    static func roundTrip(_ bitmap: Bitmap, _ format: ImageFormat, quality: Double) throws -> Bitmap {
        let data = try ImageCodersManager.shared.encode(
            DecodedImage(bitmap: bitmap, format: .png),
            as: format,
            options: .init(quality: quality)
        )
        return try ImageCodersManager.shared.decode(data).bitmap
    }

    @Test("DSSIM: 0 for identical pixels, growing as JPEG quality falls; sizes must match")
    func dssim() throws {
        let photo = Self.photo
        #expect(try ImageDifference.dssim(photo, photo) < 1e-6)
        let scores = try [90.0, 70, 40, 15].map {
            try ImageDifference.dssim(photo, Self.roundTrip(photo, .jpeg, quality: $0 / 100))
        }
        #expect(scores[0] > 0 && scores[0] < scores[1] && scores[1] < scores[2] && scores[2] < scores[3], "\(scores)")
        let other = GeneratedImages.gradient(width: 10, height: 10)
        do {
            _ = try ImageDifference.dssim(photo, other)
            Issue.record("bitmaps of different sizes compared")
        } catch {
            #expect(
                error.code == "invalidArgument"
                    && "\(error)".contains("cannot compare a 320×240 image with a 10×10 one")
            )
        }
    }

    @Test("Butteraugli: about 0 for identical pixels, growing as quality falls")
    func butteraugli() throws {
        let photo = Self.photo
        #expect(try ImageDifference.butteraugli(photo, photo) < 0.01)
        let high = try ImageDifference.butteraugli(photo, Self.roundTrip(photo, .jpeg, quality: 0.9))
        let low = try ImageDifference.butteraugli(photo, Self.roundTrip(photo, .jpeg, quality: 0.3))
        #expect(high > 0 && high < low)
    }

    @Test(
        "Autoquality by size: the highest quality in range that fits, found in few encodes; below the range if it must",
        arguments: [ImageFormat.jpeg, .webp, .avif, .jxl]
    )
    func bySize(format: ImageFormat) throws {
        let image = DecodedImage(bitmap: Self.photo, format: .png)
        let top = try ImageCodersManager.shared.encode(image, as: format, options: .init(quality: 0.9)).count
        let bottom = try ImageCodersManager.shared.encode(image, as: format, options: .init(quality: 0.3)).count
        let budget = Double(bottom + (top - bottom) / 3)
        let autoQuality = AutoQuality(method: .size, target: budget, range: 30...90)
        let result = try ImageCodersManager.shared.encode(image, as: format, options: .init(), autoQuality: autoQuality)
        #expect(Double(result.data.count) <= budget && result.score == Double(result.data.count), "\(format)")
        #expect(result.encodes <= autoQuality.maxEncodes, "\(format)")
        #expect(Double(result.data.count) >= 0.8 * budget, "\(format): \(result.data.count) of \(budget)")
        // At most a few quality points (AVIF: one quantizer, 1.6 points) short of the best that fits.
        let setting = ImageCodersManager.encoderSetting(for: format)
        var higherQuality = result.quality
        var steps = 0
        while steps < 2, higherQuality < 100 {
            higherQuality += 1
            if setting(higherQuality) != setting(higherQuality - 1) { steps += 1 }
        }
        higherQuality = max(higherQuality, result.quality + 3)
        let higher = try ImageCodersManager.shared.encode(
            image,
            as: format,
            options: .init(quality: Double(higherQuality) / 100)
        )
        #expect(Double(higher.count) > budget || higherQuality > 90, "\(format) q\(result.quality)")
        // A budget the top of the range meets takes one encode; one nothing meets gives the bottom.
        let roomy = try ImageCodersManager.shared.encode(
            image,
            as: format,
            options: .init(),
            autoQuality: AutoQuality(method: .size, target: Double(top * 2), range: 30...90)
        )
        #expect(roomy.quality == 90 && roomy.encodes == 1)
        let tight = try ImageCodersManager.shared.encode(
            image,
            as: format,
            options: .init(),
            autoQuality: AutoQuality(method: .size, target: 10, range: 30...90)
        )
        #expect(tight.quality < 30 && tight.data.count > 10 && tight.encodes <= 6, "\(format) q\(tight.quality)")
        // A budget the range's lowest quality misses but a lower one keeps: kept, below the range.
        let lowest = try ImageCodersManager.shared.encode(image, as: format, options: .init(quality: 0.01)).count
        let under = Double(lowest + (bottom - lowest) / 2)
        let belowRange = try ImageCodersManager.shared.encode(
            image,
            as: format,
            options: .init(),
            autoQuality: AutoQuality(method: .size, target: under, range: 30...90)
        )
        #expect(Double(belowRange.data.count) <= under && belowRange.quality < 30, "\(format) q\(belowRange.quality)")
    }

    @Test(
        "Autoquality by DSSIM: within the allowed error of the target, or the lowest quality that meets it",
        arguments: [ImageFormat.jpeg, .webp, .avif, .jxl]
    )
    func byDSSIM(format: ImageFormat) throws {
        let image = DecodedImage(bitmap: Self.photo, format: .png)
        let reference = try ImageDifference.dssim(Self.photo, Self.roundTrip(Self.photo, format, quality: 0.5))
        let autoQuality = AutoQuality(method: .dssim, target: reference, range: 20...95, allowedError: reference * 0.1)
        let result = try ImageCodersManager.shared.encode(image, as: format, options: .init(), autoQuality: autoQuality)
        let decoded = try ImageCodersManager.shared.decode(result.data).bitmap
        #expect(abs(try ImageDifference.dssim(Self.photo, decoded) - result.score) < 1e-9)
        #expect(result.score <= reference * 1.1, "\(format): \(result.score) for \(reference)")
        if result.score < reference * 0.9 {
            // Not within the error: then the next lower quality the encoder tells apart must miss it.
            let setting = ImageCodersManager.encoderSetting(for: format)
            let lowerQuality = try #require((1..<result.quality).last { setting($0) != setting(result.quality) })
            let lower = try ImageDifference.dssim(
                Self.photo,
                Self.roundTrip(Self.photo, format, quality: Double(lowerQuality) / 100)
            )
            #expect(lower > reference * 1.1, "\(format) q\(result.quality)")
        }
        #expect(result.encodes <= 4, "\(format): \(result.encodes) encodes")
    }

    @Test("AVIF's qualities that share a quantizer are tried once: the search never encodes the same file twice")
    func sharedQuantizers() throws {
        let setting = ImageCodersManager.encoderSetting(for: .avif)
        #expect(setting(63) == setting(62) && setting(63) != setting(61) && setting(80) != setting(63))
        // A measure that depends on the quantizer only, as AVIF's does; targets across the range.
        for target in stride(from: 0.004, through: 0.06, by: 0.004) {
            var search = QualitySearch(
                autoQuality: AutoQuality(method: .dssim, target: target, range: 20...95, allowedError: 1e-6),
                setting: setting
            )
            while let quality = search.nextQuality() {
                let score = 0.002 * exp(0.08 * Double(setting(quality)))
                search.record(QualitySearch.Trial(quality: quality, score: score, data: Data()))
            }
            let quantizers = search.trials.map { setting($0.quality) }
            #expect(Set(quantizers).count == quantizers.count, "target \(target): quantizers \(quantizers)")
            let chosen = try search.result()
            #expect(chosen.score <= target + 1e-6 || chosen.quality == 95, "target \(target): \(chosen.score)")
        }
    }

    @Test("The search's bookkeeping: an empty search is an error; a cancelled encode stops it")
    func edges() throws {
        #expect(throws: CoderError.self) {
            try QualitySearch(autoQuality: AutoQuality(method: .size, target: 1)).result()
        }
        var options = ImageEncodingOptions()
        options.cancellation = CodingCancellation()
        options.cancellation?.cancel()
        let image = DecodedImage(bitmap: Self.photo, format: .png)
        do {
            _ = try ImageCodersManager.shared.encode(
                image,
                as: .webp,
                options: options,
                autoQuality: AutoQuality(method: .dssim, target: 0.01)
            )
            Issue.record("a cancelled search finished")
        } catch {
            #expect(error.code == "limitExceeded")
        }
        #expect(AutoQuality.defaultRange(for: .avif) == 60...65 && AutoQuality.defaultRange(for: .jpeg) == 70...80)
        #expect(AutoQuality(method: .size, target: 1, range: 0...500).range == 1...100)
    }
}
