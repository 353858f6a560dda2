import Foundation
import Testing
import WebImageCoders
import WebImageTestSupport

@Suite("APNG encoding")
struct APNGEncoderTests {
    @Test("An animation round-trips as APNG: frames, pixels, durations, loop count; alpha in every frame")
    func roundTrip() throws {
        let opaque = GeneratedImages.gradient(width: 30, height: 20)
        let translucent = GeneratedImages.translucentGradient(width: 30, height: 20)
        var image = DecodedImage(
            frames: [
                .init(bitmap: opaque, duration: 0.1), .init(bitmap: translucent, duration: 0.25),
                .init(bitmap: opaque, duration: 70),
            ],
            format: .gif
        )
        image.loopCount = 2
        let data = try PNGCoder().encode(image, as: .png, options: .init())
        #expect(ImageFormat(sniffing: data) == .png)
        #expect(ImageHeader(data)?.frameCount == 3)
        let decoded = try PNGCoder().decode(data, options: .init())
        #expect(decoded.frames.count == 3)
        #expect(decoded.loopCount == 2)
        #expect(decoded.frames.map(\.duration) == [0.1, 0.25, 70])
        // Lossless, and each frame replaces the last: the translucent frame is not blended over.
        #expect(decoded.frames[0].bitmap.pixels == opaque.pixels)
        #expect(decoded.frames[1].bitmap.pixels == translucent.pixels)
        #expect(decoded.frames[2].bitmap.pixels == opaque.pixels)
        // A still image stays a plain PNG.
        let still = try PNGCoder().encode(DecodedImage(bitmap: opaque, format: .png), as: .png, options: .init())
        #expect(ImageHeader(still)?.frameCount == 1)
        #expect(!String(decoding: still, as: UTF8.self).contains("acTL"))
    }

    @Test("Frames of different sizes are an encoding error, not a broken file")
    func mismatchedFrames() {
        let image = DecodedImage(
            frames: [
                .init(bitmap: GeneratedImages.gradient(width: 30, height: 20), duration: 0.1),
                .init(bitmap: GeneratedImages.gradient(width: 20, height: 20), duration: 0.1),
            ],
            format: .gif
        )
        #expect(throws: CoderError.self) { try PNGCoder().encode(image, as: .png, options: .init()) }
    }
}
