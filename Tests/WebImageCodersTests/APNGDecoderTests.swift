import Foundation
import Testing
import WebImageCoders
import WebImageTestSupport

@Suite("APNG decoding")
struct APNGDecoderTests {
    static let red: [UInt16] = [255, 0, 0, 255]
    static let blue: [UInt16] = [0, 0, 255, 255]
    static let halfGreen: [UInt16] = [0, 255, 0, 128]
    static let clear: [UInt16] = [0, 0, 0, 0]

    let builder = PNGBuilder(width: 4, height: 4, colorType: .rgba)

    func full(_ color: [UInt16], dispose: UInt8 = 0, blend: UInt8 = 0) -> PNGBuilder.Frame {
        PNGBuilder.Frame(width: 4, height: 4, dispose: dispose, blend: blend) { _, _ in color }
    }

    func patch(_ color: [UInt16], dispose: UInt8 = 0, blend: UInt8 = 0) -> PNGBuilder.Frame {
        PNGBuilder.Frame(x: 1, y: 1, width: 2, height: 2, dispose: dispose, blend: blend) { _, _ in color }
    }

    func rgba(_ sample: [UInt16]) -> RGBA {
        RGBA(r: UInt8(sample[0]), g: UInt8(sample[1]), b: UInt8(sample[2]), a: UInt8(sample[3]))
    }

    @Test("Frames, loop count and durations")
    func framesAndTiming() throws {
        var frames = [full(Self.red), full(Self.blue)]
        frames[1].delayNumerator = 3
        frames[1].delayDenominator = 0  // 0 means 1/100 s units
        let image = try PNGCoder().decode(builder.buildAnimated(frames: frames, plays: 3), options: .init())
        #expect(image.format == .png)
        #expect(image.frames.count == 2 && image.isAnimated)
        #expect(image.loopCount == 3)
        #expect(image.frames[0].duration == 0.1)
        #expect(image.frames[1].duration == 0.03)
        #expect(image.frames[0].bitmap[0, 0] == rgba(Self.red))
        #expect(image.frames[1].bitmap[3, 3] == rgba(Self.blue))
    }

    @Test("Dispose none keeps, background clears, previous restores")
    func disposeOperations() throws {
        // Frame 0 red canvas; frame 1 a blue patch with the dispose under test; frame 2 draws
        // nothing visible (a transparent patch blended over), so it shows what disposal left.
        let cases: [(UInt8, RGBA)] = [
            (0, rgba(Self.blue)),  // none: the blue patch stays
            (1, RGBA(r: 0, g: 0, b: 0, a: 0)),  // background: the patch area is cleared
            (2, rgba(Self.red)),  // previous: the red under the patch comes back
        ]
        for (dispose, expectedCenter) in cases {
            let frames = [full(Self.red), patch(Self.blue, dispose: dispose), patch(Self.clear, blend: 1)]
            let image = try PNGCoder().decode(builder.buildAnimated(frames: frames), options: .init())
            #expect(image.frames[1].bitmap[1, 1] == rgba(Self.blue))
            #expect(image.frames[2].bitmap[1, 1] == expectedCenter, "dispose \(dispose)")
            #expect(image.frames[2].bitmap[0, 0] == rgba(Self.red), "outside the patch is untouched")
        }
    }

    @Test("Blend over composites; blend source replaces")
    func blendOperations() throws {
        let over = try PNGCoder().decode(
            builder.buildAnimated(frames: [full(Self.red), patch(Self.halfGreen, blend: 1)]),
            options: .init()
        )
        let blended = over.frames[1].bitmap[1, 1]
        #expect(blended.a == 255)
        #expect(abs(Int(blended.r) - 127) <= 1 && abs(Int(blended.g) - 128) <= 1 && blended.b == 0)

        let source = try PNGCoder().decode(
            builder.buildAnimated(frames: [full(Self.red), patch(Self.halfGreen, blend: 0)]),
            options: .init()
        )
        #expect(source.frames[1].bitmap[1, 1] == rgba(Self.halfGreen))
    }

    @Test("A default image that is not a frame is skipped")
    func defaultImageNotAFrame() throws {
        let data = builder.buildAnimated(
            frames: [full(Self.red), full(Self.blue)],
            defaultImageIsFirstFrame: false,
            defaultImage: { _, _ in [9, 9, 9, 255] }
        )
        let image = try PNGCoder().decode(data, options: .init())
        #expect(image.frames.count == 2)
        #expect(image.frames[0].bitmap[0, 0] == rgba(Self.red))
        #expect(image.sourceFrameCount == 2)
    }

    @Test("First frame only still reports the frame count")
    func firstFrameOnly() throws {
        let data = builder.buildAnimated(frames: [full(Self.red), full(Self.blue), full(Self.red)])
        let image = try PNGCoder().decode(data, options: .init(firstFrameOnly: true))
        #expect(image.frames.count == 1 && image.sourceFrameCount == 3)
    }

    @Test("A frame outside the canvas is corrupt data")
    func frameOutsideCanvas() throws {
        let outside = PNGBuilder.Frame(x: 3, y: 3, width: 2, height: 2) { _, _ in Self.red }
        #expect {
            try PNGCoder().decode(builder.buildAnimated(frames: [full(Self.red), outside]), options: .init())
        } throws: { ($0 as? CoderError)?.code == "corruptData" }
    }
}
