import Foundation
import Testing
import WebImageTestSupport

@testable import WebImageCoders

/// A GIF's frames reached by a jump from the nearest frame that needs no earlier one.
@Suite("GIF key frames: random access from the nearest independent frame")
struct GIFKeyFrameTests {
    static let (width, height) = (24, 16)

    /// 20 frames: opaque full frames at 5 (keep) and 15 (restore previous: not a key frame); a
    /// full frame at 10 with a transparent index that is cleared after it, making 11 a key frame;
    /// patches with transparency and every disposal between.
    static func gif() -> Data {
        let palette: [(UInt8, UInt8, UInt8)] = (0..<16).map { (level: Int) in
            (UInt8(level * 16), UInt8(255 - level * 16), UInt8(level * 7))
        }
        let full = { (shade: Int) -> [UInt8] in
            (0..<width * height).map { (pixel: Int) in UInt8((pixel / 3 + shade) % 16) }
        }
        var frames: [GIFBuilder.Frame] = []
        for index in 0..<20 {
            switch index {
            case 0, 5:
                frames.append(.init(width: width, height: height, disposal: 1, indices: full(index)))
            case 10:
                frames.append(
                    .init(width: width, height: height, disposal: 2, transparentIndex: 3, indices: full(index))
                )
            case 15:
                frames.append(.init(width: width, height: height, disposal: 3, indices: full(index)))
            default:
                frames.append(
                    .init(
                        x: index % 9,
                        y: index % 7,
                        width: 10,
                        height: 8,
                        disposal: [1, 2, 3][index % 3],
                        transparentIndex: index % 2 == 0 ? 0 : nil,
                        delayCentiseconds: 3 + index % 5,
                        indices: (0..<80).map { UInt8(($0 + index) % 16) }
                    )
                )
            }
        }
        return GIFBuilder(width: width, height: height, globalPalette: palette).build(frames: frames)
    }

    @Test("The scan finds frames 0, 5 and 11 independent; a jump lands on the last one at or before the frame asked")
    func jumps() throws {
        let data = Self.gif()
        let whole = try ImageCodersManager.shared.decode(data)
        let decoder = try GIFFrameDecoder(data: data, options: ImageDecodingOptions())
        let deadline = CodingDeadline(ImageDecodingOptions())
        // Forward past two key frames: lands on 11, not on 0 or 5.
        #expect(decoder.skip(to: 13))
        #expect(decoder.position == 11)
        #expect(try decoder.nextCanvas(within: deadline) == whole.frames[11].bitmap)
        // Backward: lands on 5 (15 restores the canvas before it, so it is no key frame).
        #expect(decoder.skip(to: 9))
        #expect(decoder.position == 5)
        #expect(try decoder.nextCanvas(within: deadline) == whole.frames[5].bitmap)
        #expect(decoder.skip(to: 17))
        #expect(decoder.position == 11)
        // No jump when the frame asked is ahead and no key frame lies between.
        _ = try decoder.nextCanvas(within: deadline)
        #expect(!decoder.skip(to: 14))
        #expect(decoder.position == 12)
    }

    @Test("Every frame asked in a shuffled order, twice over, is the whole decode's frame")
    func shuffled() throws {
        let data = Self.gif()
        let whole = try ImageCodersManager.shared.decode(data)
        let animation = try AnimatedImage(data: data)
        var generator = SplitMix64(seed: 43)
        for index in (Array(0..<20) + Array(0..<20)).shuffled(using: &generator) {
            #expect(try animation.frame(at: index).bitmap == whole.frames[index].bitmap, "frame \(index)")
        }
    }
}
