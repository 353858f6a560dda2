import Foundation
import Testing
import WebImageTestSupport

@testable import WebImageCoders

@Suite("Progressive (incremental) decoding")
struct ProgressiveDecodingTests {
    /// Feeds `data` in `chunk`-byte steps; returns the partial images and the final one.
    func feed(_ data: Data, chunk: Int) throws -> (partials: [DecodedImage], final: DecodedImage) {
        let decoder = try #require(ImageCodersManager.shared.makeIncrementalDecoder(forPrefix: data.prefix(64)))
        var partials: [DecodedImage] = []
        var offset = 0
        while offset < data.count {
            offset = min(data.count, offset + chunk)
            let isComplete = offset == data.count
            if let image = try decoder.update(data.prefix(offset), isComplete: isComplete) {
                if isComplete { return (partials, image) }
                partials.append(image)
            }
        }
        Issue.record("no final image")
        throw CoderError.emptyData
    }

    func assertFinalEqualsOneShot(_ data: Data, _ final: DecodedImage) throws {
        let oneShot = try ImageCodersManager.shared.decode(data)
        #expect(!final.isPartial)
        #expect(final.frames.count == oneShot.frames.count)
        for (a, b) in zip(final.frames, oneShot.frames) {
            #expect(GeneratedImages.maxDifference(a.bitmap, b.bitmap) == 0)
        }
    }

    @Test("Progressive JPEG: a preview per scan, then the one-shot result")
    func progressiveJPEG() throws {
        let bitmap = GeneratedImages.noise(width: 160, height: 120)
        let data = try JPEGCoder().encode(
            DecodedImage(bitmap: bitmap, format: .jpeg),
            as: .jpeg,
            options: .init(progressive: true)
        )
        let (partials, final) = try feed(data, chunk: 512)
        #expect(partials.count >= 3, "several scans should each give a preview")
        #expect(partials.allSatisfy { $0.isPartial && $0.width == 160 && $0.height == 120 })
        try assertFinalEqualsOneShot(data, final)
        // Later scans are closer to the final picture.
        let first = GeneratedImages.meanDifference(partials.first!.bitmap, final.bitmap)
        let last = GeneratedImages.meanDifference(partials.last!.bitmap, final.bitmap)
        #expect(last < first)
    }

    @Test("Baseline JPEG: previews as rows arrive")
    func baselineJPEG() throws {
        let bitmap = GeneratedImages.noise(width: 160, height: 160)
        let data = try JPEGCoder().encode(DecodedImage(bitmap: bitmap, format: .jpeg), as: .jpeg, options: .init())
        let (partials, final) = try feed(data, chunk: 4096)
        #expect(partials.count >= 2)
        #expect(partials.allSatisfy { $0.isPartial })
        try assertFinalEqualsOneShot(data, final)
    }

    @Test("PNG, plain and interlaced: previews, then the one-shot result", arguments: [false, true])
    func png(interlaced: Bool) throws {
        let data = PNGBuilder(width: 64, height: 64, colorType: .rgb, interlaced: interlaced).build { x, y in
            [UInt16((x * 7 + y) % 256), UInt16(y * 3 % 256), UInt16((x ^ y) % 256)]
        }
        let (partials, final) = try feed(data, chunk: 1500)
        #expect(partials.count >= 2)
        #expect(partials.allSatisfy { $0.isPartial && $0.width == 64 })
        try assertFinalEqualsOneShot(data, final)
        if interlaced {
            // The first preview already covers the whole image (pass pixels fill their blocks).
            #expect(!partials[0].bitmap.containsTransparency)
        } else {
            // Rows not yet received are transparent.
            #expect(partials[0].bitmap[0, 63].a == 0 && partials[0].bitmap[0, 0].a == 255)
        }
    }

    @Test("WebP: rows as they decode, then the one-shot result")
    func webp() throws {
        let bitmap = GeneratedImages.noise(width: 128, height: 128)
        let data = try WebPCoder().encode(
            DecodedImage(bitmap: bitmap, format: .webp),
            as: .webp,
            options: .init(quality: 0.9)
        )
        let (partials, final) = try feed(data, chunk: 2048)
        #expect(partials.count >= 2)
        #expect(partials.allSatisfy { $0.isPartial })
        try assertFinalEqualsOneShot(data, final)
    }

    @Test(
        "Animated WebP: the first frame once its ANMF chunk has arrived, as the whole decode has it; then every frame"
    )
    func animatedWebP() throws {
        let data = try GeneratedImages.movingSquareAnimation(width: 96, height: 64, frames: 6, format: .webp)
        let whole = try ImageCodersManager.shared.decode(data)
        let (partials, final) = try feed(data, chunk: 64)
        #expect(partials.count == 1)
        let preview = try #require(partials.first)
        #expect(preview.isPartial && preview.frames.count == 1)
        #expect(preview.frames[0].bitmap == whole.frames[0].bitmap)
        #expect(final.frames.count == 6)
        try assertFinalEqualsOneShot(data, final)
        // Not before the first frame's chunk is whole: one byte short of it gives nothing.
        let firstFrameEnd = try #require(WebPIncrementalDecoder.firstFrameData(data)).count
        #expect(WebPIncrementalDecoder.firstFrameData(data.prefix(firstFrameEnd - 2)) == nil)
    }

    @Test("GIF: the first frame once it has arrived, then every frame")
    func gif() throws {
        let animation = GeneratedImages.animation(
            width: 64,
            height: 64,
            colors: [RGBA(r: 255, g: 0, b: 0), RGBA(r: 0, g: 255, b: 0), RGBA(r: 0, g: 0, b: 255)],
            format: .gif
        )
        var frames = animation.frames
        // Frames big enough to arrive in pieces, so the first is complete well before the end.
        frames[0].bitmap = GeneratedImages.noise(width: 64, height: 64)
        frames[1].bitmap = GeneratedImages.noise(width: 64, height: 64, seed: 7)
        let data = try GIFCoder().encode(
            DecodedImage(frames: frames, loopCount: 0, format: .gif),
            as: .gif,
            options: .init()
        )
        let (partials, final) = try feed(data, chunk: 256)
        #expect(partials.count == 1)
        #expect(partials.first?.frames.count == 1 && partials.first?.isPartial == true)
        #expect(final.frames.count == 3)
        try assertFinalEqualsOneShot(data, final)
    }

    @Test("Truncated data at the end is still an error for the final decode")
    func truncatedFinal() throws {
        let data = PNGBuilder(width: 32, height: 32, colorType: .gray).build { x, _ in [UInt16(x)] }
        let decoder = try #require(
            PNGCoder().makeIncrementalDecoder(options: .init()) as (any IncrementalImageDecoding)?
        )
        _ = try decoder.update(data.prefix(100), isComplete: false)
        #expect(throws: CoderError.self) { try decoder.update(data.prefix(200), isComplete: true) }
    }
}
