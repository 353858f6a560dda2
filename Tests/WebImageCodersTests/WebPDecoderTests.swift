import Foundation
import Testing
import WebImageCoders
import WebImageTestSupport

@Suite("WebP decoding")
struct WebPDecoderTests {
    @Test("Lossy decodes close to the source")
    func lossy() throws {
        let source = GeneratedImages.gradient(width: 96, height: 64)
        let data = try WebPCoder().encode(
            DecodedImage(bitmap: source, format: .webp),
            as: .webp,
            options: .init(quality: 0.9)
        )
        let image = try WebPCoder().decode(data, options: .init())
        #expect(image.width == 96 && image.height == 64 && image.format == .webp)
        #expect(GeneratedImages.meanDifference(image.bitmap, source) < 3)
        #expect(!image.hasAlpha)
    }

    @Test("Lossless with alpha is exact")
    func losslessAlpha() throws {
        let source = GeneratedImages.translucentGradient(width: 40, height: 30)
        let data = try WebPCoder().encode(
            DecodedImage(bitmap: source, format: .webp),
            as: .webp,
            options: .init(lossless: true)
        )
        let image = try WebPCoder().decode(data, options: .init())
        #expect(image.hasAlpha)
        #expect(GeneratedImages.maxDifference(image.bitmap, source) == 0)
    }

    @Test("Lossy with alpha keeps the alpha channel")
    func lossyAlpha() throws {
        let source = GeneratedImages.translucentGradient(width: 40, height: 30)
        let data = try WebPCoder().encode(
            DecodedImage(bitmap: source, format: .webp),
            as: .webp,
            options: .init(quality: 0.8)
        )
        let image = try WebPCoder().decode(data, options: .init())
        #expect(image.hasAlpha)
        #expect(abs(Int(image.bitmap[0, 10].a) - 255) < 4 && image.bitmap[39, 10].a < 8)
    }

    @Test("Animated: frames, durations, loop count; first frame only")
    func animated() throws {
        let colors = [RGBA(r: 255, g: 0, b: 0), RGBA(r: 0, g: 255, b: 0), RGBA(r: 0, g: 0, b: 255)]
        var animation = GeneratedImages.animation(
            width: 16,
            height: 12,
            colors: colors,
            duration: 0.25,
            loopCount: 2,
            format: .webp
        )
        animation.frames[2].duration = 0.005  // browsers play ≤ 10 ms as 100 ms
        let data = try WebPCoder().encode(animation, as: .webp, options: .init(lossless: true))
        let image = try WebPCoder().decode(data, options: .init())
        #expect(image.frames.count == 3 && image.loopCount == 2)
        #expect(
            zip(image.frames, animation.frames).allSatisfy { GeneratedImages.maxDifference($0.bitmap, $1.bitmap) == 0 }
        )
        #expect(abs(image.frames[0].duration - 0.25) < 0.001)
        #expect(abs(image.frames[2].duration - 0.1) < 0.001)

        let first = try WebPCoder().decode(data, options: .init(firstFrameOnly: true))
        #expect(first.frames.count == 1 && first.sourceFrameCount == 3)
    }

    @Test("Thumbnail decodes scaled")
    func thumbnail() throws {
        let source = GeneratedImages.gradient(width: 400, height: 200)
        let data = try WebPCoder().encode(DecodedImage(bitmap: source, format: .webp), as: .webp, options: .init())
        let image = try WebPCoder().decode(data, options: .init(thumbnailPixelSize: PixelSize(width: 100, height: 100)))
        #expect(image.width == 100 && image.height == 50)
        #expect(image.sourceSize == PixelSize(width: 400, height: 200))
    }

    @Test("Truncated WebP is a truncatedData error")
    func truncated() throws {
        let data = try WebPCoder().encode(
            DecodedImage(bitmap: GeneratedImages.noise(width: 64, height: 64), format: .webp),
            as: .webp,
            options: .init()
        )
        #expect {
            try WebPCoder().decode(data.prefix(data.count * 2 / 3), options: .init())
        } throws: { ($0 as? CoderError)?.code == "truncatedData" }
    }
}
