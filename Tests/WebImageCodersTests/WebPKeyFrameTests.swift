import Foundation
import Testing
import WebImageTestSupport

@testable import WebImageCoders

/// An animated WebP's frames reached by a jump from the nearest key frame (read as the first
/// frame of a shorter animation).
@Suite("WebP key frames: random access from the nearest frame libwebp composes alone")
struct WebPKeyFrameTests {
    /// 40 frames of 64×48: the whole canvas changes shade every 8th frame (libwebp's encoder then
    /// writes a full opaque frame: a key frame), a square moves between.
    static func animation() throws -> Data {
        var options = ImageEncodingOptions()
        options.maxEncodeDuration = nil
        let encoder = try AnimationEncoder(
            format: .webp,
            canvasSize: PixelSize(width: 64, height: 48),
            frameCount: 40,
            loopCount: 0,
            options: options
        )
        for index in 0..<40 {
            let (shade, left, top) = (index / 8 * 40, index % 7 * 8, index % 5 * 8)
            var pixels = [UInt8](repeating: 255, count: 64 * 48 * 4)
            for pixel in 0..<64 * 48 {
                let (x, y) = (pixel % 64, pixel / 64)
                let inSquare = (left..<left + 8).contains(x) && (top..<top + 8).contains(y)
                pixels[pixel * 4] = inSquare ? 250 : UInt8(40 + shade)
                pixels[pixel * 4 + 1] = inSquare ? UInt8(index * 6) : 90
                pixels[pixel * 4 + 2] = inSquare ? 10 : UInt8(200 - shade)
            }
            let bitmap = Bitmap(width: 64, height: 48, hasAlpha: false, pixels: pixels)
            try encoder.add(.init(bitmap: bitmap, duration: 0.05))
        }
        return try encoder.finish()
    }

    @Test(
        "libwebp's encoder writes key frames along the animation; a jump lands on the last one at or before the frame asked"
    )
    func jumps() throws {
        let data = try Self.animation()
        let whole = try ImageCodersManager.shared.decode(data)
        let keys = WebPFrameDecoder.keyFrames(of: data).map(\.index)
        #expect(keys.first == 0)
        let later = try #require(keys.dropFirst().first, "key frames: \(keys)")
        let decoder = try WebPFrameDecoder(data: data, options: ImageDecodingOptions())
        let deadline = CodingDeadline(ImageDecodingOptions())
        #expect(decoder.skip(to: later + 1))
        #expect(decoder.position == later)
        #expect(try decoder.nextCanvas(within: deadline) == whole.frames[later].bitmap)
        #expect(try decoder.nextCanvas(within: deadline) == whole.frames[later + 1].bitmap)
        // Back to the start: the whole file again.
        #expect(decoder.skip(to: 1))
        #expect(decoder.position == 0)
        #expect(try decoder.nextCanvas(within: deadline) == whole.frames[0].bitmap)
    }

    @Test("Every frame asked in a shuffled order, twice over, is the whole decode's frame")
    func shuffled() throws {
        let data = try Self.animation()
        let whole = try ImageCodersManager.shared.decode(data)
        let animation = try AnimatedImage(data: data)
        var generator = SplitMix64(seed: 47)
        for index in (Array(0..<40) + Array(0..<40)).shuffled(using: &generator) {
            #expect(try animation.frame(at: index).bitmap == whole.frames[index].bitmap, "frame \(index)")
        }
    }

    @Test("Key frames of data that does not parse: none, and no jump")
    func brokenData() throws {
        #expect(WebPFrameDecoder.keyFrames(of: Data("RIFF\u{0}\u{0}\u{0}\u{0}WEBPVP8X".utf8)).isEmpty)
    }
}
