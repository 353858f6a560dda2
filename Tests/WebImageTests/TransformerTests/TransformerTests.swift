import Foundation
import Testing
import WebImage
import WebImageTestSupport

@Suite("Image transformers")
struct TransformerTests {
    /// 4×2: top row red, green, blue, white; bottom row black, then three 50 % greys.
    static let sample: DecodedImage = {
        var bitmap = Bitmap(width: 4, height: 2)
        let colors: [RGBA] = [
            .init(r: 255, g: 0, b: 0, a: 255), .init(r: 0, g: 255, b: 0, a: 255), .init(r: 0, g: 0, b: 255, a: 255),
            .init(r: 255, g: 255, b: 255, a: 255), .init(r: 0, g: 0, b: 0, a: 255),
            .init(r: 128, g: 128, b: 128, a: 255), .init(r: 128, g: 128, b: 128, a: 255),
            .init(r: 128, g: 128, b: 128, a: 255),
        ]
        for (index, color) in colors.enumerated() { bitmap[index % 4, index / 4] = color }
        return DecodedImage(bitmap: bitmap, format: .png)
    }()

    func apply(_ transformer: any ImageTransformer, _ image: DecodedImage = sample) throws -> Bitmap {
        try #require(transformer.transform(image, forKey: "k")).bitmap
    }

    @Test("Resize fit, fill and exact give the promised sizes")
    func resize() throws {
        let image = DecodedImage(bitmap: GeneratedImages.gradient(width: 200, height: 100), format: .png)
        let fit = try apply(ResizeTransformer(size: PixelSize(width: 50, height: 50), mode: .fit), image)
        #expect((fit.width, fit.height) == (50, 25))
        let fill = try apply(ResizeTransformer(size: PixelSize(width: 50, height: 50), mode: .fill), image)
        #expect((fill.width, fill.height) == (50, 50))
        let exact = try apply(ResizeTransformer(size: PixelSize(width: 30, height: 70), mode: .exact), image)
        #expect((exact.width, exact.height) == (30, 70))
        // A side of 0 follows the aspect ratio (imgproxy's rule); both 0, or a negative side, fail.
        let byHeight = try apply(ResizeTransformer(size: PixelSize(width: 0, height: 5)), image)
        #expect((byHeight.width, byHeight.height) == (10, 5))
        let byWidth = try apply(ResizeTransformer(size: PixelSize(width: 40, height: 0), mode: .fill), image)
        #expect((byWidth.width, byWidth.height) == (40, 20))
        let stretched = try apply(ResizeTransformer(size: PixelSize(width: 0, height: 50), mode: .exact), image)
        #expect((stretched.width, stretched.height) == (100, 50))
        #expect(ResizeTransformer(size: PixelSize(width: 0, height: 0)).transform(image, forKey: "k") == nil)
        #expect(ResizeTransformer(size: PixelSize(width: -1, height: 5)).transform(image, forKey: "k") == nil)
    }

    @Test("A resize past maxPixelCount gives no image instead of allocating it; sizes no Int product holds too")
    func resizeLimit() throws {
        let image = DecodedImage(bitmap: GeneratedImages.gradient(width: 200, height: 100), format: .png)
        // 100,000 × 50,000 = 5 × 10⁹ pixels (20 GB): refused before any allocation.
        for mode in [ResizeTransformer.Mode.fit, .fill, .exact] {
            let huge = ResizeTransformer(size: PixelSize(width: 100_000, height: 50_000), mode: mode)
            #expect(huge.transform(image, forKey: "k") == nil, "\(mode)")
            let widest = ResizeTransformer(size: PixelSize(width: .max, height: .max), mode: mode)
            #expect(widest.transform(image, forKey: "k") == nil, "\(mode)")
        }
        // .fill counts the covering image: 20,000 × 1 covers at 20,000 × 10,000.
        let covering = ResizeTransformer(size: PixelSize(width: 20_000, height: 1), mode: .fill)
        #expect(covering.transform(image, forKey: "k") == nil)
        // The limit is the transformer's to set: just over refuses, at it resizes.
        var limited = ResizeTransformer(size: PixelSize(width: 400, height: 200), mode: .exact)
        limited.maxPixelCount = 79_999
        #expect(limited.transform(image, forKey: "k") == nil)
        limited.maxPixelCount = 80_000
        let resized = try apply(limited, image)
        #expect((resized.width, resized.height) == (400, 200))
    }

    @Test("Crop, flip and rotate move the right pixels")
    func geometry() throws {
        let crop = try apply(CropTransformer(x: 1, y: 0, width: 2, height: 1))
        #expect((crop.width, crop.height) == (2, 1))
        #expect(crop[0, 0] == RGBA(r: 0, g: 255, b: 0, a: 255))
        #expect(CropTransformer(x: 10, y: 10, width: 2, height: 2).transform(Self.sample, forKey: "k") == nil)

        let flipped = try apply(FlipTransformer(horizontal: true))
        #expect(flipped[0, 0] == RGBA(r: 255, g: 255, b: 255, a: 255))
        let flippedV = try apply(FlipTransformer(horizontal: false, vertical: true))
        #expect(flippedV[0, 0] == RGBA(r: 0, g: 0, b: 0, a: 255))

        let clockwise = try apply(RotateTransformer(quarterTurns: 1))
        #expect((clockwise.width, clockwise.height) == (2, 4))
        // Turned clockwise, the old bottom-left (black) is the new top-left.
        #expect(clockwise[0, 0] == RGBA(r: 0, g: 0, b: 0, a: 255))
        #expect(clockwise[1, 0] == RGBA(r: 255, g: 0, b: 0, a: 255))
        let back = try apply(RotateTransformer(quarterTurns: -1), DecodedImage(bitmap: clockwise, format: .png))
        #expect(back == Self.sample.bitmap)
    }

    @Test("Gravity places a rectangle at each side, corner and the centre; crops and fills follow it")
    func gravity() throws {
        let container = PixelSize(width: 10, height: 6)
        let size = PixelSize(width: 4, height: 2)
        let expected: [ImageGravity: (Int, Int)] = [
            .northWest: (0, 0), .north: (3, 0), .northEast: (6, 0), .west: (0, 2), .center: (3, 2),
            .east: (6, 2), .southWest: (0, 4), .south: (3, 4), .southEast: (6, 4),
        ]
        for gravity in ImageGravity.allCases {
            let origin = gravity.origin(of: size, in: container)
            #expect(origin.x == expected[gravity]?.0 && origin.y == expected[gravity]?.1, "\(gravity)")
        }
        // The sample's bottom-right 2×1 (two greys) and top-right 1×1 (white), the last moved left by one.
        let corner = try #require(
            CropTransformer(width: 2, height: 1, gravity: .southEast).transform(Self.sample, forKey: "")
        )
        #expect(corner.width == 2 && corner.bitmap[0, 0] == RGBA(r: 128, g: 128, b: 128))
        let moved = try #require(
            CropTransformer(width: 1, height: 1, gravity: .northEast, x: -1).transform(Self.sample, forKey: "")
        )
        #expect(moved.bitmap[0, 0] == RGBA(r: 0, g: 0, b: 255))
        // A rectangle larger than the image is clipped to it.
        #expect(CropTransformer(width: 9, height: 9, gravity: .center).transform(Self.sample, forKey: "")?.width == 4)
        let east = try #require(
            ResizeTransformer(size: PixelSize(width: 1, height: 1), mode: .fill, gravity: .east).transform(
                Self.sample,
                forKey: ""
            )
        )
        #expect(east.width == 1 && east.height == 1)
        #expect(
            ResizeTransformer(size: PixelSize(width: 1, height: 1), mode: .fill).transformerKey == "Resize(fill,1x1)"
        )
        #expect(
            ResizeTransformer(size: PixelSize(width: 1, height: 1), mode: .fill, gravity: .east).transformerKey
                == "Resize(fill,1x1,east)"
        )
    }

    @Test("OrientTransformer turns the pixels upright and reports .up")
    func orient() throws {
        let turned = DecodedImage(bitmap: Self.sample.bitmap, format: .png, orientation: .right)
        let upright = try #require(OrientTransformer().transform(turned, forKey: ""))
        #expect(upright.orientation == .up && upright.width == 2 && upright.height == 4)
        #expect(upright.bitmap.pixels == Self.sample.bitmap.applyingOrientation(.right).pixels)
        #expect(OrientTransformer().transform(Self.sample, forKey: "")?.bitmap == Self.sample.bitmap)
    }

    @Test("Grayscale, tint, round corners and blur")
    func pixels() throws {
        let gray = try apply(GrayscaleTransformer())
        #expect(gray[0, 0] == RGBA(r: 76, g: 76, b: 76, a: 255))
        #expect(gray[3, 0] == RGBA(r: 255, g: 255, b: 255, a: 255))

        let tinted = try apply(TintTransformer(color: RGBA(r: 0, g: 0, b: 255, a: 255), fraction: 1))
        #expect(tinted[0, 0] == RGBA(r: 0, g: 0, b: 255, a: 255))

        let square = DecodedImage(
            bitmap: GeneratedImages.solid(width: 20, height: 20, color: .init(r: 9, g: 9, b: 9, a: 255)),
            format: .png
        )
        let rounded = try apply(RoundCornerTransformer(radius: 8), square)
        #expect(rounded[0, 0].a == 0)
        #expect(rounded[10, 10].a == 255)
        #expect(rounded[10, 0].a == 255)

        let dot = {
            var bitmap = Bitmap(width: 9, height: 9, fill: .init(r: 0, g: 0, b: 0, a: 255))
            bitmap[4, 4] = .init(r: 255, g: 255, b: 255, a: 255)
            return DecodedImage(bitmap: bitmap, format: .png)
        }()
        let blurred = try apply(BlurTransformer(radius: 1), dot)
        #expect(blurred[4, 4].r < 255 && blurred[4, 4].r > 0)
        #expect(blurred[3, 4].r > 0)
        #expect(blurred[0, 0].r == 0)
    }

    @Test("A pipeline runs in order and joins the keys; animated images transform every frame")
    func pipeline() throws {
        let pipeline = PipelineTransformer([
            CropTransformer(x: 0, y: 0, width: 2, height: 2), GrayscaleTransformer(),
        ])
        #expect(pipeline.transformerKey == "Crop(0,0,2x2)-Grayscale")
        let result = try apply(pipeline)
        #expect((result.width, result.height) == (2, 2))
        #expect(result[1, 0] == RGBA(r: 150, g: 150, b: 150, a: 255))

        let animation = DecodedImage(
            frames: [
                .init(
                    bitmap: GeneratedImages.solid(width: 8, height: 8, color: .init(r: 255, g: 0, b: 0, a: 255)),
                    duration: 0.1
                ),
                .init(
                    bitmap: GeneratedImages.solid(width: 8, height: 8, color: .init(r: 0, g: 255, b: 0, a: 255)),
                    duration: 0.2
                ),
            ],
            loopCount: 0,
            format: .gif
        )
        let small = try #require(
            ResizeTransformer(size: PixelSize(width: 4, height: 4)).transform(animation, forKey: "k")
        )
        #expect(small.frames.count == 2)
        #expect(small.frames.map(\.duration) == [0.1, 0.2])
        #expect(small.loopCount == 0)
        #expect(small.frames.allSatisfy { $0.bitmap.width == 4 })
    }
}
