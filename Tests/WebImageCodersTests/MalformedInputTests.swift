import Foundation
import Testing
import WebImageCoders
import WebImageTestSupport

@Suite("Malformed input")
struct MalformedInputTests {
    @Test("Empty data and unknown formats")
    func emptyAndUnknown() {
        #expect(throws: CoderError.emptyData) { try ImageCodersManager.shared.decode(Data()) }
        #expect(throws: CoderError.unsupportedFormat(.unknown)) {
            try ImageCodersManager.shared.decode(Data("hello".utf8))
        }
        #expect(throws: CoderError.unsupportedFormat(.svg)) {
            try ImageCodersManager.shared.decode(Data("<svg xmlns=\"http://www.w3.org/2000/svg\"/>".utf8))
        }
        // A TIFF header with nothing after it: libtiff's own reason, as corrupt data.
        #expect {
            try ImageCodersManager.shared.decode(Data([0x49, 0x49, 0x2A, 0, 8, 0, 0, 0]))
        } throws: { error in
            (error as? CoderError)?.code == "corruptData" && "\(error)".contains("tiff")
        }
        for coder in ImageCodersManager.builtInCoders {
            #expect(throws: CoderError.emptyData) { try coder.decode(Data(), options: .init()) }
        }
    }

    @Test(
        "Every prefix and thousands of byte flips give a result or a CoderError, never a crash",
        arguments: [ImageFormat.jpeg, .png, .gif, .webp]
    )
    func mutations(format: ImageFormat) async throws {
        let animation = GeneratedImages.animation(
            width: 24,
            height: 16,
            colors: [RGBA(r: 250, g: 10, b: 10), RGBA(r: 10, g: 10, b: 250, a: 128)],
            format: format
        )
        let data: Data
        if format == .jpeg || format == .png {
            data = try ImageCodersManager.shared.encode(
                DecodedImage(bitmap: GeneratedImages.noise(width: 24, height: 16), format: format),
                as: format
            )
        } else {
            data = try ImageCodersManager.shared.encode(animation, as: format)
        }
        // Thousands of decodes run on a GCD thread, not the Swift cooperative pool, which the
        // suite's network tests need meanwhile; what went wrong is asserted here afterwards.
        let outcomes = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(returning: Self.decodeMutations(of: data, seed: format.rawValue))
            }
        }
        #expect(outcomes.problems.isEmpty, "\(outcomes.problems.prefix(5))")
        #expect(outcomes.failed > 0, "mutations should be rejected")
        #expect(outcomes.decoded > 0, "at least the unmodified file decodes")
    }

    /// Decodes every prefix of `data`, 2,000 seeded byte-flipped copies and `data` itself:
    /// counts the results and errors, and describes any decode that broke the rules.
    private static func decodeMutations(
        of data: Data,
        seed: String
    ) -> (decoded: Int, failed: Int, problems: [String]) {
        var outcomes = (decoded: 0, failed: 0, problems: [String]())
        func attempt(_ bytes: Data) {
            do {
                let image = try ImageCodersManager.shared.decode(bytes, options: .init(maxPixelCount: 1 << 22))
                if image.width <= 0 || image.height <= 0 { outcomes.problems.append("an empty image") }
                outcomes.decoded += 1
            } catch {
                if error.description.isEmpty { outcomes.problems.append("an error without words") }
                outcomes.failed += 1
            }
        }
        for length in stride(from: 0, to: data.count, by: max(1, data.count / 200)) { attempt(data.prefix(length)) }
        // A fixed seed per format: String.hashValue is randomised per process.
        var generator = SplitMix64(seed: UInt64(seed.utf8.reduce(0) { $0 &* 31 &+ UInt32($1) }))
        for _ in 0..<2000 {
            var bytes = [UInt8](data)
            for _ in 0..<1 + Int(generator.next() % 4) {
                bytes[Int(generator.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: generator.next())
            }
            attempt(Data(bytes))
        }
        attempt(data)  // the unmodified file
        return outcomes
    }

    @Test("Truncated, corrupt and over-limit inputs give distinct error codes")
    func distinctErrors() throws {
        let png = try PNGCoder().encode(
            DecodedImage(bitmap: GeneratedImages.noise(width: 32, height: 32), format: .png),
            as: .png,
            options: .init()
        )
        var corrupt = [UInt8](png)
        corrupt[12] = UInt8(ascii: "X")  // IHDR renamed
        let codes = [
            Self.code { try ImageCodersManager.shared.decode(Data()) },
            Self.code { try ImageCodersManager.shared.decode(Data("nope".utf8)) },
            Self.code { try ImageCodersManager.shared.decode(png.prefix(png.count - 40)) },
            Self.code { try ImageCodersManager.shared.decode(Data(corrupt)) },
            Self.code { try ImageCodersManager.shared.decode(png, options: .init(maxPixelCount: 100)) },
        ]
        #expect(codes == ["emptyData", "unsupportedFormat", "truncatedData", "corruptData", "limitExceeded"])
    }

    static func code(_ body: () throws -> DecodedImage) -> String? {
        do {
            _ = try body()
            return nil
        } catch let error as CoderError {
            return error.code
        } catch {
            return "unexpected"
        }
    }
}
