import Foundation
import Testing
import WebImageTestEncoders
import WebImageTestSupport

@testable import WebImageCoders

@Suite("JPEG XL decoding")
struct JXLCoderTests {
    @Test("A lossless still image decodes to its exact pixels; the data sniffs as JPEG XL and its header reads")
    func still() throws {
        let source = GeneratedImages.gradient(width: 96, height: 64)
        let data = try JXLTestEncoder.encode([source])
        #expect(ImageFormat(sniffing: data) == .jxl)
        #expect(ImageHeader(data) == ImageHeader(format: .jxl, size: PixelSize(width: 96, height: 64), frameCount: 1))
        let image = try ImageCodersManager.shared.decode(data)
        #expect(image.format == .jxl && image.width == 96 && image.height == 64 && image.frames.count == 1)
        #expect(image.loopCount == 1 && image.frames[0].duration == 0)
        #expect(!image.hasAlpha && image.bitmap.pixels == source.pixels)
    }

    @Test("Alpha survives exactly in a lossless file")
    func alpha() throws {
        let source = GeneratedImages.translucentGradient(width: 40, height: 30)
        let image = try JXLCoder().decode(try JXLTestEncoder.encode([source]), options: .init())
        #expect(image.hasAlpha && image.bitmap.pixels == source.pixels)
    }

    @Test("A lossy (XYB) image is rendered in sRGB, close to its source")
    func lossy() throws {
        let source = GeneratedImages.gradient(width: 128, height: 96)
        let image = try JXLCoder().decode(try JXLTestEncoder.encode([source], distance: 1), options: .init())
        #expect(GeneratedImages.meanDifference(image.bitmap, source) < 3)
    }

    @Test("An animation keeps its frames, durations and loop count; firstFrameOnly decodes one and counts all")
    func animation() throws {
        let colors: [RGBA] = [.init(r: 255, g: 0, b: 0), .init(r: 0, g: 255, b: 0), .init(r: 0, g: 0, b: 255, a: 90)]
        let frames = colors.map { GeneratedImages.solid(width: 32, height: 24, color: $0) }
        let data = try JXLTestEncoder.encode(frames, durations: [100, 250, 100], loopCount: 2)
        #expect(ImageHeader(data)?.frameCount == 3)
        let image = try JXLCoder().decode(data, options: .init())
        #expect(image.frames.count == 3 && image.sourceFrameCount == 3 && image.loopCount == 2)
        #expect(image.frames.map(\.duration) == [0.1, 0.25, 0.1])
        #expect(image.frames.map { $0.bitmap[16, 12] } == colors)
        let first = try JXLCoder().decode(data, options: .init(firstFrameOnly: true))
        #expect(first.frames.count == 1 && first.sourceFrameCount == 3 && first.bitmap[5, 5] == colors[0])
        let forever = try JXLCoder().decode(try JXLTestEncoder.encode(frames, loopCount: 0), options: .init())
        #expect(forever.loopCount == 0)
    }

    @Test("The codestream orientation is reported, and applied on request", arguments: 1...8)
    func orientation(raw: Int) throws {
        let orientation = try #require(ImageOrientation(rawValue: raw))
        let source = GeneratedImages.noise(width: 5, height: 3)
        let data = try JXLTestEncoder.encode([source], orientation: orientation)
        let stored = try JXLCoder().decode(data, options: .init())
        #expect(stored.orientation == orientation && stored.bitmap.pixels == source.pixels)
        let upright = try JXLCoder().decode(data, options: .init(applyOrientation: true))
        let expected = source.applyingOrientation(orientation)
        #expect(upright.orientation == .up && upright.bitmap.pixels == expected.pixels)
        #expect(upright.width == expected.width)
    }

    @Test("Thumbnails: decoded, then reduced to fit the box")
    func thumbnail() throws {
        let data = try JXLTestEncoder.encode([GeneratedImages.gradient(width: 200, height: 100)])
        let image = try JXLCoder().decode(data, options: .init(thumbnailPixelSize: PixelSize(width: 50, height: 50)))
        #expect(image.width == 50 && image.height == 25 && image.sourceSize == PixelSize(width: 200, height: 100))
    }

    @Test("Limits refuse before the pixels: pixel count, frames, animation bytes")
    func limits() throws {
        let still = try JXLTestEncoder.encode([GeneratedImages.gradient(width: 64, height: 64)])
        #expect(throws: CoderError.limitExceeded(.jxl, "64×64 is over the 4032-pixel limit")) {
            try JXLCoder().decode(still, options: .init(maxPixelCount: 64 * 63))
        }
        let frames = [RGBA](repeating: .init(r: 9, g: 9, b: 9), count: 3).enumerated().map {
            GeneratedImages.solid(width: 16, height: 16, color: RGBA(r: UInt8($0.offset * 50), g: 9, b: 9))
        }
        let animation = try JXLTestEncoder.encode(frames)
        #expect(throws: CoderError.limitExceeded(.jxl, "3 frames is over the 2-frame limit")) {
            try JXLCoder().decode(animation, options: .init(maxFrameCount: 2))
        }
        #expect(throws: CoderError.self) {
            try JXLCoder().decode(animation, options: .init(maxAnimationBytes: 16 * 16 * 4 * 2))
        }
    }

    @Test("Truncated, damaged and foreign data fail with a CoderError, never a crash")
    func badInput() throws {
        let data = try JXLTestEncoder.encode([GeneratedImages.noise(width: 64, height: 64)], distance: 2)
        for cut in [2, 12, data.count / 3, data.count / 2, data.count - 4] {
            #expect(throws: CoderError.self, "cut at \(cut)") {
                try JXLCoder().decode(data.prefix(cut), options: .init())
            }
        }
        var damaged = data
        for index in stride(from: data.count / 2, to: data.count, by: 7) { damaged[index] ^= 0x5A }
        _ = try? JXLCoder().decode(damaged, options: .init())  // either outcome, no crash
        #expect(throws: CoderError.self) { try JXLCoder().decode(Data([0xFF, 0x0A, 1, 2, 3]), options: .init()) }
        #expect(throws: CoderError.self) { try JXLCoder().decode(Data(), options: .init()) }
    }
}

@Suite("JPEG XL encoding")
struct JXLEncoderTests {
    private static func encode(
        _ image: DecodedImage,
        _ options: ImageEncodingOptions = .init()
    ) throws(CoderError) -> Data {
        try ImageCodersManager.shared.encode(image, as: .jxl, options: options)
    }

    @Test("The manager finds the encoder; quality maps to cjxl's Butteraugli distances")
    func distances() {
        #expect(ImageCodersManager.shared.encoder(for: .jxl) is JXLCoder)
        #expect(JXLEncoding.distance(forQuality: 0.9) == Float(1.0))
        #expect(abs(JXLEncoding.distance(forQuality: 0.77) - 2.17) < 0.001)
        #expect(abs(JXLEncoding.distance(forQuality: 0.3) - 6.4) < 0.001)
        #expect(JXLEncoding.distance(forQuality: 1) == 0)
        #expect(JXLEncoding.distance(forQuality: 0) == 25)
    }

    @Test("A lossy still round-trips through libjxl's decoder at its size, close to its pixels")
    func lossyStill() throws {
        let source = GeneratedImages.gradient(width: 160, height: 90)
        let data = try Self.encode(DecodedImage(bitmap: source, format: .png), .init(quality: 0.77))
        #expect(ImageFormat(sniffing: data) == .jxl)
        #expect(ImageHeader(data)?.size == PixelSize(width: 160, height: 90))
        let decoded = try JXLCoder().decode(data, options: .init())
        #expect(decoded.width == 160 && decoded.height == 90 && decoded.frames.count == 1 && !decoded.hasAlpha)
        #expect(GeneratedImages.meanDifference(decoded.bitmap, source) < 3)
    }

    @Test("Lower quality gives fewer bytes; quality 1 and `lossless` keep every pixel, alpha too")
    func qualityAndLossless() throws {
        let source = DecodedImage(bitmap: GeneratedImages.noise(width: 96, height: 96), format: .png)
        let sizes = try [0.4, 0.77, 0.95].map { try Self.encode(source, .init(quality: $0)).count }
        #expect(sizes[0] < sizes[1] && sizes[1] < sizes[2])
        let translucent = DecodedImage(bitmap: GeneratedImages.translucentGradient(width: 50, height: 40), format: .png)
        for options in [ImageEncodingOptions(quality: 1), ImageEncodingOptions(quality: 0.5, lossless: true)] {
            let decoded = try JXLCoder().decode(try Self.encode(translucent, options), options: .init())
            #expect(decoded.hasAlpha && decoded.bitmap.pixels == translucent.bitmap.pixels)
        }
        let opaque = try JXLCoder().decode(try Self.encode(source, .init(lossless: true)), options: .init())
        #expect(opaque.bitmap.pixels == source.bitmap.pixels)
    }

    @Test("Effort trades time for bytes: effort 7 is smaller than effort 1, per coder and per call")
    func effort() throws {
        let source = DecodedImage(bitmap: GeneratedImages.noise(width: 128, height: 128), format: .png)
        let fast = try JXLCoder(effort: 1).encode(source, as: .jxl, options: .init(quality: 0.8))
        let slow = try JXLCoder(effort: 7).encode(source, as: .jxl, options: .init(quality: 0.8))
        #expect(slow.count < fast.count)
        var options = ImageEncodingOptions(quality: 0.8)
        options.jxlEffort = 1
        #expect(try JXLCoder(effort: 7).encode(source, as: .jxl, options: options) == fast)
    }

    @Test("An animation keeps its frames, durations and loop count; firstFrameOnly writes a still")
    func animation() throws {
        let colors: [RGBA] = [.init(r: 255, g: 0, b: 0), .init(r: 0, g: 200, b: 0), .init(r: 0, g: 0, b: 255)]
        var image = GeneratedImages.animation(width: 48, height: 32, colors: colors, loopCount: 3, format: .gif)
        image.frames[1].duration = 0.25
        let decoded = try JXLCoder().decode(try Self.encode(image, .init(quality: 1)), options: .init())
        #expect(decoded.frames.count == 3 && decoded.loopCount == 3)
        #expect(decoded.frames.map(\.duration) == [0.1, 0.25, 0.1])
        #expect(decoded.frames.map { $0.bitmap[20, 10] } == colors)
        let still = try JXLCoder().decode(try Self.encode(image, .init(firstFrameOnly: true)), options: .init())
        #expect(still.frames.count == 1 && still.sourceFrameCount == 1)
    }

    @Test("Pixels in a wide-gamut profile keep it: the decode converts them back to the same sRGB colour")
    func profile() throws {
        let profile = ColorProfile.displayP3
        let p3Red = RGBA(r: 234, g: 51, b: 35)  // sRGB red expressed in Display P3
        let image = DecodedImage(
            frames: [.init(bitmap: GeneratedImages.solid(width: 16, height: 16, color: p3Red), duration: 0)],
            format: .png,
            colorProfile: profile
        )
        let decoded = try JXLCoder().decode(try Self.encode(image, .init(quality: 1)), options: .init())
        let pixel = decoded.bitmap[8, 8]
        #expect(pixel.r > 245 && pixel.g < 12 && pixel.b < 12, "\(pixel)")
    }

    @Test("A cancelled or expired encode throws limitExceeded; a JPEG XL coder writes nothing else")
    func stops() throws {
        let source = DecodedImage(bitmap: GeneratedImages.noise(width: 64, height: 64), format: .png)
        var options = ImageEncodingOptions()
        options.cancellation = CodingCancellation()
        options.cancellation?.cancel()
        do {
            _ = try Self.encode(source, options)
            Issue.record("a cancelled encode finished")
        } catch {
            #expect(error.code == "limitExceeded")
        }
        #expect(throws: CoderError.self) { try JXLCoder().encode(source, as: .png, options: .init()) }
    }
}
