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
