import Foundation
import Testing
import WebImageTestSupport

@testable import WebImageCoders

/// An APNG's frames reached by a jump from the nearest frame that needs no earlier one, found
/// from the frame control chunks.
@Suite("APNG key frames: random access from the nearest independent frame")
struct APNGKeyFrameTests {
    static let (width, height) = (12, 10)

    /// 20 frames: whole-canvas `source` frames at 6 (a key frame) and 14 (restores the canvas
    /// after it: not one), a whole-canvas frame at 9 blended `over` (not one) and disposed to the
    /// background (making 10 one); patches with every disposal and blend between.
    static func apng() -> Data {
        let shade = { (index: Int, alpha: UInt16) in
            { (x: Int, y: Int) -> [UInt16] in
                [UInt16((x * 20 + index * 13) % 256), UInt16((y * 25 + index * 7) % 256), UInt16(index * 12), alpha]
            }
        }
        var frames: [PNGBuilder.Frame] = []
        for index in 0..<20 {
            switch index {
            case 0, 6:
                frames.append(PNGBuilder.Frame(width: width, height: height, samples: shade(index, 255)))
            case 9:
                frames.append(
                    PNGBuilder.Frame(width: width, height: height, dispose: 1, blend: 1, samples: shade(index, 128))
                )
            case 14:
                frames.append(PNGBuilder.Frame(width: width, height: height, dispose: 2, samples: shade(index, 255)))
            default:
                frames.append(
                    PNGBuilder.Frame(
                        x: index % 5,
                        y: index % 4,
                        width: 6,
                        height: 5,
                        dispose: UInt8(index % 3),
                        blend: UInt8(index % 2),
                        samples: shade(index, index % 2 == 0 ? 200 : 90)
                    )
                )
            }
        }
        return PNGBuilder(width: width, height: height, colorType: .rgba).buildAnimated(frames: frames)
    }

    @Test("Frames 0, 6 and 10 are key frames; a jump lands on the last one at or before the frame asked")
    func jumps() throws {
        let data = Self.apng()
        let whole = try ImageCodersManager.shared.decode(data)
        #expect(whole.frames.count == 20)
        let decoder = try APNGFrameDecoder(data: data, options: ImageDecodingOptions())
        #expect(APNGFrameDecoder.keyFrames(of: decoder.animation) == [0, 6, 10])
        let deadline = CodingDeadline(ImageDecodingOptions())
        #expect(decoder.skip(to: 12))
        #expect(decoder.position == 10)
        #expect(try decoder.nextCanvas(within: deadline) == whole.frames[10].bitmap)
        // Backward: lands on 6 (9 is blended over what came before it).
        #expect(decoder.skip(to: 9))
        #expect(decoder.position == 6)
        #expect(try decoder.nextCanvas(within: deadline) == whole.frames[6].bitmap)
        // Past 14, which restores the canvas after it: from 10.
        #expect(decoder.skip(to: 17))
        #expect(decoder.position == 10)
        // No jump when the frame asked is ahead and no key frame lies between.
        _ = try decoder.nextCanvas(within: deadline)
        #expect(!decoder.skip(to: 16))
        #expect(decoder.position == 11)
        #expect(decoder.skip(to: 3) && decoder.position == 0)
    }

    @Test("Every frame asked in a shuffled order, twice over, is the whole decode's frame")
    func shuffled() throws {
        let data = Self.apng()
        let whole = try ImageCodersManager.shared.decode(data)
        let animation = try AnimatedImage(data: data)
        var generator = SplitMix64(seed: 47)
        for index in (Array(0..<20) + Array(0..<20)).shuffled(using: &generator) {
            #expect(try animation.frame(at: index).bitmap == whole.frames[index].bitmap, "frame \(index)")
        }
    }
}
