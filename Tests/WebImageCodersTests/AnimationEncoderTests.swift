import Foundation
import Testing
import WebImageCoders
import WebImageTestSupport

/// Frame-by-frame encoding: the same files the whole-image encoders write.
@Suite("AnimationEncoder and AnimatedImage.encode: a frame at a time")
struct AnimationEncoderTests {
    static let source = GIFBuilder.checkerAnimation(width: 60, height: 40, frames: 12)

    @Test(
        "Decoded, then encoded frame by frame: byte for byte what the whole encoders write",
        arguments: [
            ImageFormat.webp, .gif, .png, .avif,
        ]
    )
    func sameBytesAsWholeEncode(format: ImageFormat) throws {
        let whole = try ImageCodersManager.shared.decode(Self.source)
        let options = ImageEncodingOptions(quality: 0.8)
        let expected = try ImageCodersManager.shared.encode(whole, as: format, options: options)
        let streamed = try AnimatedImage(data: Self.source).encode(as: format, options: options)
        // libavif stamps a sequence's movie, track and media headers with the time of the encode.
        #expect(Self.withoutTimestamps(streamed) == Self.withoutTimestamps(expected))
        let decoded = try ImageCodersManager.shared.decode(streamed)
        #expect(decoded.frames.count == 12 && decoded.loopCount == 0)
        #expect(decoded.frames.map(\.duration) == whole.frames.map(\.duration))
    }

    /// `data` with the creation and modification times of its `mvhd`, `tkhd` and `mdhd` boxes
    /// zeroed (ISO BMFF: after the box type, a version byte and three flag bytes, two 32-bit
    /// times, or 64-bit ones for version 1); other files unchanged.
    static func withoutTimestamps(_ data: Data) -> Data {
        var bytes = [UInt8](data)
        for type in ["mvhd", "tkhd", "mdhd"] {
            let pattern = Array(type.utf8)
            var start = 0
            while let found = bytes.indices.dropFirst(start).first(where: {
                bytes[$0..<min($0 + 4, bytes.count)].elementsEqual(pattern)
            }) {
                let version = bytes[found + 4]
                let times = found + 8
                let length = version == 1 ? 16 : 8
                if times + length <= bytes.count {
                    bytes.replaceSubrange(times..<times + length, with: repeatElement(0, count: length))
                }
                start = found + 4
            }
        }
        return Data(bytes)
    }

    @Test("A transform runs on each frame as it is decoded; durations, loop count and the frame limit hold")
    func transformEachFrame() throws {
        let animation = try AnimatedImage(data: Self.source)
        var seen: [Int] = []
        let data = try animation.encode(as: .webp, frameLimit: 9) { frame in
            seen.append(frame.bitmap.width)
            var small = frame
            small.bitmap = frame.bitmap.resized(to: PixelSize(width: 30, height: 20))
            return small
        }
        #expect(seen == Array(repeating: 60, count: 9))
        let decoded = try ImageCodersManager.shared.decode(data)
        #expect(decoded.width == 30 && decoded.height == 20)
        #expect(decoded.frames.count == 9)
        #expect(decoded.frames.map(\.duration) == Array(animation.info.durations.prefix(9)))
        #expect(decoded.loopCount == animation.loopCount)
    }

    @Test("Misuse is an error naming it: another size, a frame after finish, finish twice, JPEG, APNG's count")
    func misuse() throws {
        let size = PixelSize(width: 8, height: 8)
        let frame = DecodedImage.Frame(bitmap: Bitmap(width: 8, height: 8, fill: RGBA(r: 9, g: 9, b: 9)), duration: 0.1)
        // Another colour: libwebp folds a frame identical to the one before into its duration.
        let second = DecodedImage.Frame(
            bitmap: Bitmap(width: 8, height: 8, fill: RGBA(r: 200, g: 9, b: 9)),
            duration: 0.1
        )
        let odd = DecodedImage.Frame(bitmap: Bitmap(width: 4, height: 8), duration: 0.1)
        for format in [ImageFormat.webp, .gif, .png, .avif] {
            let encoder = try AnimationEncoder(format: format, canvasSize: size, frameCount: 2, loopCount: 0)
            try encoder.add(frame)
            #expect(throws: CoderError.encodingFailed(format, "frame 2 is 4×8, not the animation's 8×8")) {
                try encoder.add(odd)
            }
            try encoder.add(second)
            let data = try encoder.finish()
            #expect(try ImageCodersManager.shared.decode(data).frames.count == 2)
            #expect(throws: CoderError.encodingFailed(format, "a frame was added after finish()")) {
                try encoder.add(frame)
            }
            #expect(throws: CoderError.encodingFailed(format, "finish() was called twice")) { try encoder.finish() }
        }
        #expect(throws: CoderError.encodingFailed(.jpeg, "frame by frame encoding writes WebP, GIF, PNG and AVIF")) {
            try AnimationEncoder(format: .jpeg, canvasSize: size, frameCount: 2, loopCount: 0)
        }
        // APNG names its frame count first: one frame short, or one past it, is refused.
        let short = try AnimationEncoder(format: .png, canvasSize: size, frameCount: 2, loopCount: 0)
        try short.add(frame)
        #expect(throws: CoderError.encodingFailed(.png, "the APNG declares 2 frames and 1 were added")) {
            try short.finish()
        }
        let long = try AnimationEncoder(format: .png, canvasSize: size, frameCount: 1, loopCount: 0)
        try long.add(frame)
        #expect(throws: CoderError.encodingFailed(.png, "frame 2 is past the 1 the APNG declares")) {
            try long.add(second)
        }
    }

    @Test("A cancelled encode stops at the next frame")
    func cancelled() throws {
        let cancellation = CodingCancellation()
        var options = ImageEncodingOptions()
        options.cancellation = cancellation
        var count = 0
        #expect(throws: CoderError.self) {
            try AnimatedImage(data: Self.source).encode(as: .gif, options: options) { frame in
                count += 1
                if count == 3 { cancellation.cancel() }
                return frame
            }
        }
        #expect(count == 3)
    }
}
