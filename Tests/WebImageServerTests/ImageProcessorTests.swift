import Foundation
import Testing
import WebImageCoders
import WebImageTestSupport

@testable import WebImageServer

@Suite("Image processing")
struct ImageProcessorTests {
    static let red = RGBA(r: 220, g: 20, b: 20)
    static let blue = RGBA(r: 20, g: 20, b: 220)

    /// Left half red, right half blue.
    static func halves(width: Int = 200, height: Int = 100) -> Bitmap {
        var pixels = [UInt8](repeating: 255, count: width * height * 4)
        for y in 0..<height {
            for x in 0..<width {
                let color = x < width / 2 ? red : blue
                let offset = (y * width + x) * 4
                (pixels[offset], pixels[offset + 1], pixels[offset + 2]) = (color.r, color.g, color.b)
            }
        }
        return Bitmap(width: width, height: height, hasAlpha: false, pixels: pixels)
    }

    static func process(_ bitmap: Bitmap, _ path: String, orientation: ImageOrientation = .up) throws -> DecodedImage {
        let options = try ProcessingOptionsTests.options(path)
        return ImageProcessor.process(
            DecodedImage(bitmap: bitmap, format: .png, orientation: orientation),
            options: options
        )
    }

    static func isClose(_ pixel: RGBA, _ color: RGBA) -> Bool {
        abs(Int(pixel.r) - Int(color.r)) < 40 && abs(Int(pixel.g) - Int(color.g)) < 40
            && abs(Int(pixel.b) - Int(color.b)) < 40
    }

    @Test("The result has the geometry's size for every resizing type")
    func sizes() throws {
        let source = Self.halves(width: 800, height: 600)
        for (path, expected) in [
            ("rs:fit:300:200", (267, 200)), ("rs:fill:300:300", (300, 300)), ("rs:force:100:300", (100, 300)),
            ("rs:fill-down:1000:1000", (600, 600)), ("w:300", (300, 225)), ("rs:fit:1000:1000:0:1", (1000, 1000)),
        ] {
            let image = try Self.process(source, path)
            #expect(image.width == expected.0 && image.height == expected.1, "\(path)")
        }
    }

    @Test("Gravity places the crop window: west, east, a focus point, and smart on the detailed half")
    func gravity() throws {
        let source = Self.halves()
        let west = try Self.process(source, "rs:fill:100:100/g:we")
        #expect(Self.isClose(west.bitmap[50, 50], Self.red))
        let east = try Self.process(source, "rs:fill:100:100/g:ea")
        #expect(Self.isClose(east.bitmap[50, 50], Self.blue))
        let focus = try Self.process(source, "rs:fill:100:100/g:fp:0.9:0.5")
        #expect(Self.isClose(focus.bitmap[50, 50], Self.blue))
        // Flat left half, noisy right half: the content-aware window goes right.
        var pixels = [UInt8](repeating: 128, count: 200 * 100 * 4)
        var seed: UInt32 = 7
        for y in 0..<100 {
            for x in 100..<200 {
                seed = seed &* 1_664_525 &+ 1_013_904_223
                let offset = (y * 200 + x) * 4
                (pixels[offset], pixels[offset + 1], pixels[offset + 2]) = (
                    UInt8(seed >> 24), UInt8(seed >> 16 & 0xFF), 0
                )
            }
        }
        let detailed = Bitmap(width: 200, height: 100, hasAlpha: false, pixels: pixels)
        #expect(SmartCrop.origin(of: PixelSize(width: 100, height: 100), in: detailed).x >= 90)
        // Every window holds the one edge: the tie goes to the centre, within one grid cell (3 px).
        #expect(abs(SmartCrop.origin(of: PixelSize(width: 100, height: 100), in: Self.halves()).x - 50) <= 3)
    }

    @Test("Orientation, rotate, extend with a background, blur and animation frames")
    func steps() throws {
        // Orientation 6 (.right): a 200×100 image shows as 100×200, red on top.
        let turned = try Self.process(Self.halves(), "cb:1", orientation: .right)
        #expect(turned.width == 100 && turned.height == 200 && turned.orientation == .up)
        #expect(Self.isClose(turned.bitmap[50, 20], Self.red) && Self.isClose(turned.bitmap[50, 180], Self.blue))
        let kept = try Self.process(Self.halves(), "ar:0/sm:0", orientation: .right)
        #expect(kept.width == 200 && kept.orientation == .right, "auto_rotate off keeps the pixels and the tag")
        let rotated = try Self.process(Self.halves(), "rot:180")
        #expect(Self.isClose(rotated.bitmap[10, 50], Self.blue))
        let extended = try Self.process(Self.halves(), "rs:fit:300:300:0:1/bg:00ff00")
        #expect(extended.width == 300 && extended.height == 300)
        #expect(extended.bitmap[5, 5] == RGBA(r: 0, g: 255, b: 0) && Self.isClose(extended.bitmap[60, 150], Self.red))
        let blurred = try Self.process(Self.halves(), "bl:5")
        let edge = blurred.bitmap[100, 50]
        #expect(edge.r > 40 && edge.r < 200, "the edge between the halves is mixed: \(edge)")
        let animation = DecodedImage(
            frames: [.init(bitmap: Self.halves(), duration: 0.1), .init(bitmap: Self.halves(), duration: 0.2)],
            format: .gif
        )
        let resized = ImageProcessor.process(animation, options: try ProcessingOptionsTests.options("w:50"))
        #expect(
            resized.frames.count == 2 && resized.frames.allSatisfy { $0.bitmap.width == 50 && $0.bitmap.height == 25 }
        )
        #expect(resized.frames.map(\.duration) == [0.1, 0.2])
    }

    @Test("Shrink on load plans on the full size: the same result sizes and nearly the same pixels")
    func shrinkOnLoad() throws {
        let source = GeneratedImages.gradient(width: 1000, height: 666)
        let data = try JPEGCoder().encode(
            DecodedImage(bitmap: source, format: .jpeg),
            as: .jpeg,
            options: .init(quality: 0.92)
        )
        let orientations = [nil, try #require(ImageHeader(data)).orientation]
        for text in ["rs:fit:256:256", "rs:fill:150:150/g:ea", "c:500:500/w:100", "rs:force:200:50", "w:120"] {
            for orientation in orientations {
                let options = try ProcessingOptionsTests.options(text)
                let full = ImageProcessor.process(try JPEGCoder().decode(data, options: .init()), options: options)
                var decoding = ImageDecodingOptions()
                let size = PixelSize(width: 1000, height: 666)
                decoding.shrinkOnLoadMinimumSize = RenderPlan.shrinkOnLoadMinimum(
                    storedSize: size,
                    geometries: RenderPlan.geometries(for: size, orientation: orientation, options: options)
                )
                let reducedSource = try JPEGCoder().decode(data, options: decoding)
                #expect(reducedSource.width < 1000, "\(text): decoded at \(reducedSource.width)")
                let reduced = ImageProcessor.process(reducedSource, options: options)
                #expect(reduced.width == full.width && reduced.height == full.height, "\(text)")
                #expect(GeneratedImages.meanDifference(reduced.bitmap, full.bitmap) < 2, "\(text)")
            }
        }
    }
}
