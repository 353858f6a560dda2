import Foundation
import Testing
@_spi(Testing) import WebImageCoders
import WebImageTestSupport

/// Long work stops when asked: the encoders and the resampler check a ``CodingCancellation``
/// (between rows, in libwebp's progress callback, between frames) and the encode time limit.
@Suite("Stopping long work: encoders and the resampler honour a cancellation", .timeLimit(.minutes(2)))
struct CodingCancellationTests {
    static let picture = DecodedImage(bitmap: GeneratedImages.noise(width: 640, height: 480), format: .png)

    @Test(
        "An encode whose cancellation is already raised stops with limitExceeded",
        arguments: [
            ImageFormat.jpeg, .png, .webp, .avif,
        ]
    )
    func raisedBeforeTheEncode(format: ImageFormat) throws {
        let cancellation = CodingCancellation()
        cancellation.cancel()
        var options = ImageEncodingOptions()
        options.cancellation = cancellation
        do {
            _ = try ImageCodersManager.shared.encode(Self.picture, as: format, options: options)
            Issue.record("\(format) encoded in spite of the cancellation")
        } catch {
            #expect(error.code == "limitExceeded")
            #expect("\(error)".contains("stopped"), "\(error)")
        }
        // The same options without the cancellation encode.
        options.cancellation = CodingCancellation()
        let data = try ImageCodersManager.shared.encode(Self.picture, as: format, options: options)
        #expect(ImageFormat(sniffing: data) == format)
    }

    @Test(
        "An encode past its time limit stops between rows (JPEG, PNG) or in libwebp's callback",
        arguments: [
            ImageFormat.jpeg, .png, .webp,
        ]
    )
    func spentTimeLimit(format: ImageFormat) throws {
        // 1 ns is spent before the first row: the first check stops it.
        let options = ImageEncodingOptions(maxEncodeDuration: .nanoseconds(1))
        #expect(throws: CoderError.self) {
            try ImageCodersManager.shared.encode(Self.picture, as: format, options: options)
        }
    }

    @Test("A lossless WebP encode cancelled from another thread while it runs stops early")
    func cancelledWhileEncoding() throws {
        // Lossless noise of 9 megapixels takes seconds; the cancellation comes from another
        // thread as soon as the encode has made its first check (a fixed delay raced the
        // encode's checks on a loaded machine and once came after the last of them).
        let large = DecodedImage(bitmap: GeneratedImages.noise(width: 3000, height: 3000), format: .png)
        let cancellation = CodingCancellation()
        cancellation.cancel(afterChecks: .max)  // counts the checks, never raises itself
        var options = ImageEncodingOptions(lossless: true, maxEncodeDuration: nil)
        options.cancellation = cancellation
        let canceller = Thread {
            while cancellation.checksMade == 0 { Thread.sleep(forTimeInterval: 0.001) }
            cancellation.cancel()
        }
        canceller.start()
        do {
            _ = try ImageCodersManager.shared.encode(large, as: .webp, options: options)
            Issue.record("the encode ran to its end after \(cancellation.checksMade) checks")
        } catch {
            #expect(error.code == "limitExceeded" && "\(error)".contains("stopped"), "\(error)")
        }
    }

    @Test("The resampler stops at a raised cancellation and otherwise resizes as before")
    func resampler() {
        let bitmap = GeneratedImages.gradient(width: 300, height: 200)
        let cancellation = CodingCancellation()
        let resized = bitmap.resized(to: PixelSize(width: 900, height: 600), cancellation: cancellation)
        #expect(resized == bitmap.resized(to: PixelSize(width: 900, height: 600)))
        cancellation.cancel()
        #expect(bitmap.resized(to: PixelSize(width: 900, height: 600), cancellation: cancellation) == nil)
        #expect(bitmap.resized(to: PixelSize(width: 30, height: 20), cancellation: cancellation) == nil)
        #expect(cancellation == cancellation && cancellation != CodingCancellation())
    }

    static func decoding(_ cancellation: CodingCancellation) -> ImageDecodingOptions {
        var options = ImageDecodingOptions()
        options.cancellation = cancellation
        return options
    }

    @Test(
        "A JPEG or PNG decode stops at each of its row checks once its cancellation is raised",
        arguments: [ImageFormat.jpeg, .png]
    )
    func decodesStopBetweenRows(format: ImageFormat) throws {
        var encoding = ImageEncodingOptions(quality: 0.9)
        encoding.progressive = true  // a progressive JPEG, an interlaced PNG: their longest paths
        let data = try ImageCodersManager.shared.encode(Self.picture, as: format, options: encoding)
        let counter = CodingCancellation()
        counter.cancel(afterChecks: .max)
        let whole = try ImageCodersManager.shared.decode(data, options: Self.decoding(counter))
        let checks = counter.checksMade
        #expect(checks > 10, "\(format) decodes with \(checks) checks")
        for check in stride(from: 1, through: checks, by: max(1, checks / 40)) {
            let cancellation = CodingCancellation()
            cancellation.cancel(afterChecks: check)
            do {
                _ = try ImageCodersManager.shared.decode(data, options: Self.decoding(cancellation))
                Issue.record("\(format): stopped at check \(check) of \(checks), it decoded anyway")
            } catch {
                #expect(error.code == "limitExceeded" && "\(error)".contains("stopped"), "\(error)")
            }
        }
        #expect(try ImageCodersManager.shared.decode(data).bitmap == whole.bitmap)
    }
}
