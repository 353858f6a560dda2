import Testing
import WebImageCoders
import WebImageTestSupport

@Suite("Resize and orientation")
struct ResizeAndOrientationTests {
    @Test(
        "Downscaling a solid colour keeps it exactly, for every filter",
        arguments: [ResizeFilter.area, .triangle, .lanczos3]
    )
    func solid(filter: ResizeFilter) {
        let color = RGBA(r: 12, g: 200, b: 77, a: 255)
        let resized = GeneratedImages.solid(width: 97, height: 61, color: color).resized(
            to: PixelSize(width: 13, height: 9),
            filter: filter
        )
        #expect(resized.width == 13 && resized.height == 9)
        for y in 0..<9 { for x in 0..<13 { #expect(resized[x, y] == color) } }
    }

    @Test("Transparent pixels do not darken their opaque neighbours")
    func premultipliedAlpha() {
        // Left half opaque white, right half transparent *black*: a naive filter turns the edge grey.
        var bitmap = Bitmap(width: 64, height: 8, fill: RGBA(r: 0, g: 0, b: 0, a: 0))
        for y in 0..<8 { for x in 0..<32 { bitmap[x, y] = RGBA(r: 255, g: 255, b: 255) } }
        let resized = bitmap.resized(to: PixelSize(width: 16, height: 2))
        for x in 0..<16 where resized[x, 0].a > 0 {
            #expect(resized[x, 0].r >= 250, "column \(x) is \(resized[x, 0])")
        }
        #expect(resized[0, 0].a == 255 && resized[15, 0].a == 0)
    }

    @Test("Area averaging of a 2×2 checkerboard is its mean")
    func areaMean() {
        let checker = GeneratedImages.blocks(
            width: 64,
            height: 64,
            colors: [RGBA(r: 0, g: 0, b: 0), RGBA(r: 200, g: 100, b: 50)],
            blockSize: 1
        )
        let resized = checker.resized(to: PixelSize(width: 8, height: 8), filter: .area)
        #expect(resized[3, 3] == RGBA(r: 100, g: 50, b: 25))
    }

    @Test(
        "Extreme aspect ratios are box-reduced per axis and keep each region's colour",
        arguments: [ResizeFilter.lanczos3, .triangle, .area]
    )
    func extremeAspectRatio(filter: ResizeFilter) {
        // 1 × 1,000,000: the top half red, the bottom half blue; to 1 × 8 (and the transpose).
        let half = 500_000
        var pixels = [UInt8](repeating: 255, count: half * 2 * 4)
        pixels.withUnsafeMutableBufferPointer { bytes in
            for pixel in 0..<half * 2 {
                bytes[pixel * 4] = pixel < half ? 255 : 0
                bytes[pixel * 4 + 1] = 0
                bytes[pixel * 4 + 2] = pixel < half ? 0 : 255
            }
        }
        let tall = Bitmap(width: 1, height: half * 2, pixels: pixels)
        let small = tall.resized(to: PixelSize(width: 1, height: 8), filter: filter)
        #expect(small.width == 1 && small.height == 8)
        // Rows further than the filter's reach from the middle keep their colour.
        #expect(small[0, 0] == RGBA(r: 255, g: 0, b: 0) && small[0, 7] == RGBA(r: 0, g: 0, b: 255))
        #expect(small[0, 3].r > small[0, 3].b && small[0, 4].b > small[0, 4].r)

        let wide = Bitmap(width: half * 2, height: 1, pixels: tall.pixels)
        let narrow = wide.resized(to: PixelSize(width: 8, height: 1), filter: filter)
        #expect(narrow[0, 0] == RGBA(r: 255, g: 0, b: 0) && narrow[7, 0] == RGBA(r: 0, g: 0, b: 255))
    }

    @Test("Upscaling works too")
    func upscale() {
        let resized = GeneratedImages.gradient(width: 10, height: 10).resized(to: PixelSize(width: 40, height: 30))
        #expect(resized.width == 40 && resized.height == 30)
        #expect(resized[0, 0].r < resized[39, 0].r)
    }

    @Test("Each EXIF orientation maps corners correctly")
    func orientations() {
        // A 3×2 image with distinct corners: A B C / D E F.
        let colors = (0..<6).map { RGBA(r: UInt8($0 * 40), g: 0, b: 0) }
        var bitmap = Bitmap(width: 3, height: 2)
        for y in 0..<2 { for x in 0..<3 { bitmap[x, y] = colors[y * 3 + x] } }
        let expectations: [(ImageOrientation, [[Int]])] = [
            (.up, [[0, 1, 2], [3, 4, 5]]),
            (.upMirrored, [[2, 1, 0], [5, 4, 3]]),
            (.down, [[5, 4, 3], [2, 1, 0]]),
            (.downMirrored, [[3, 4, 5], [0, 1, 2]]),
            (.leftMirrored, [[0, 3], [1, 4], [2, 5]]),
            (.right, [[3, 0], [4, 1], [5, 2]]),
            (.rightMirrored, [[5, 2], [4, 1], [3, 0]]),
            (.left, [[2, 5], [1, 4], [0, 3]]),
        ]
        for (orientation, rows) in expectations {
            let turned = bitmap.applyingOrientation(orientation)
            let actual = (0..<turned.height).map { y in (0..<turned.width).map { x in Int(turned[x, y].r) / 40 } }
            #expect(actual == rows, "\(orientation)")
        }
    }
}
