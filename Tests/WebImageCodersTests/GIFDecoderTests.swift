import Foundation
import Testing
import WebImageCoders
import WebImageTestSupport

@Suite("GIF decoding")
struct GIFDecoderTests {
    static let palette: [(UInt8, UInt8, UInt8)] = [(255, 0, 0), (0, 0, 255), (0, 255, 0), (0, 0, 0)]
    static let red = RGBA(r: 255, g: 0, b: 0)
    static let blue = RGBA(r: 0, g: 0, b: 255)
    static let green = RGBA(r: 0, g: 255, b: 0)
    static let clear = RGBA(r: 0, g: 0, b: 0, a: 0)

    func fullFrame(_ index: UInt8, disposal: Int = 1, delay: Int = 10) -> GIFBuilder.Frame {
        GIFBuilder.Frame(
            width: 4,
            height: 4,
            disposal: disposal,
            delayCentiseconds: delay,
            indices: Array(repeating: index, count: 16)
        )
    }

    func patch(_ index: UInt8, disposal: Int = 1, transparentIndex: Int? = nil) -> GIFBuilder.Frame {
        GIFBuilder.Frame(
            x: 1,
            y: 1,
            width: 2,
            height: 2,
            disposal: disposal,
            transparentIndex: transparentIndex,
            indices: Array(repeating: index, count: 4)
        )
    }

    @Test("Disposal: keep, restore background (transparent), restore previous")
    func disposals() throws {
        for (disposal, expected) in [(1, Self.blue), (2, Self.clear), (3, Self.red)] {
            let data = GIFBuilder(width: 4, height: 4, globalPalette: Self.palette).build(frames: [
                fullFrame(0), patch(1, disposal: disposal), patch(3, transparentIndex: 3),
            ])
            let image = try GIFCoder().decode(data, options: .init())
            #expect(image.frames.count == 3)
            #expect(image.frames[1].bitmap[1, 1] == Self.blue)
            #expect(image.frames[2].bitmap[1, 1] == expected, "disposal \(disposal)")
            #expect(image.frames[2].bitmap[0, 0] == Self.red)
        }
    }

    @Test("Transparent pixels show the frame below")
    func transparency() throws {
        var top = patch(1, transparentIndex: 1)
        top.indices = [1, 2, 2, 1]
        let data = GIFBuilder(width: 4, height: 4, globalPalette: Self.palette).build(frames: [fullFrame(0), top])
        let image = try GIFCoder().decode(data, options: .init())
        #expect(image.frames[1].bitmap[1, 1] == Self.red)
        #expect(image.frames[1].bitmap[2, 1] == Self.green)
        #expect(image.hasAlpha, "a transparent index declares alpha")
    }

    @Test("Loop count from the NETSCAPE extension", arguments: [(Optional<Int>.none, 1), (0, 0), (1, 2), (4, 5)])
    func loopCount(netscape: Int?, plays: Int) throws {
        let data = GIFBuilder(width: 4, height: 4, globalPalette: Self.palette, netscapeLoop: netscape)
            .build(frames: [fullFrame(0), fullFrame(1)])
        #expect(try GIFCoder().decode(data, options: .init()).loopCount == plays)
    }

    @Test("Delays under 20 ms play at 100 ms", arguments: [(0, 0.1), (1, 0.1), (2, 0.02), (7, 0.07), (150, 1.5)])
    func delays(centiseconds: Int, seconds: Double) throws {
        let data = GIFBuilder(width: 4, height: 4, globalPalette: Self.palette)
            .build(frames: [fullFrame(0, delay: centiseconds), fullFrame(1, delay: centiseconds)])
        let image = try GIFCoder().decode(data, options: .init())
        #expect(abs(image.frames[0].duration - seconds) < 1e-9)
    }

    @Test("Interlaced frames and local palettes")
    func interlacedAndLocalPalette() throws {
        let indices = (0..<64).map { UInt8($0 / 8 % 4) }  // row y has index y % 4
        let frame = GIFBuilder.Frame(
            width: 8,
            height: 8,
            palette: Self.palette.reversed(),
            interlaced: true,
            indices: indices
        )
        let data = GIFBuilder(width: 8, height: 8, globalPalette: nil, netscapeLoop: nil).build(frames: [frame])
        let image = try GIFCoder().decode(data, options: .init())
        let reversed = Array(Self.palette.reversed())
        for y in 0..<8 {
            let entry = reversed[y % 4]
            #expect(image.bitmap[3, y] == RGBA(r: entry.0, g: entry.1, b: entry.2), "row \(y)")
        }
        #expect(image.frames.count == 1 && !image.isAnimated)
    }

    @Test("Frames reaching outside the canvas are clipped")
    func clipping() throws {
        let outside = GIFBuilder.Frame(x: 2, y: 2, width: 4, height: 4, indices: Array(repeating: 1, count: 16))
        let data = GIFBuilder(width: 4, height: 4, globalPalette: Self.palette).build(frames: [fullFrame(0), outside])
        let image = try GIFCoder().decode(data, options: .init())
        #expect(image.width == 4 && image.height == 4)
        #expect(image.frames[1].bitmap[3, 3] == Self.blue && image.frames[1].bitmap[1, 1] == Self.red)
    }

    @Test("Animated GIF round trip through the encoder keeps frames, colours, timing and loops")
    func roundTrip() throws {
        let colors = [Self.red, Self.green, Self.blue]
        let animation = GeneratedImages.animation(
            width: 10,
            height: 6,
            colors: colors,
            duration: 0.2,
            loopCount: 3,
            format: .gif
        )
        let data = try GIFCoder().encode(animation, as: .gif, options: .init())
        let image = try GIFCoder().decode(data, options: .init())
        #expect(image.frames.count == 3 && image.loopCount == 3)
        #expect(
            zip(image.frames, animation.frames).allSatisfy { GeneratedImages.maxDifference($0.bitmap, $1.bitmap) == 0 }
        )
        #expect(image.frames.allSatisfy { abs($0.duration - 0.2) < 1e-9 })
    }

    @Test("Encoding a many-coloured image quantises to a close palette")
    func quantisation() throws {
        let gradient = GeneratedImages.gradient(width: 64, height: 64)
        let data = try GIFCoder().encode(DecodedImage(bitmap: gradient, format: .gif), as: .gif, options: .init())
        let image = try GIFCoder().decode(data, options: .init())
        #expect(GeneratedImages.meanDifference(image.bitmap, gradient) < 4)
    }
}
