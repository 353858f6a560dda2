import CWebImageShims
import Testing
import WebImageCoders
import WebImageTestSupport

@Suite("Fixed-point resampling of opaque pixels")
struct FixedPointResampleTests {
    /// A deterministic pseudo-random sequence (no global generator: the test must repeat).
    struct Sequence {
        var state: UInt64
        mutating func next(_ range: ClosedRange<Int>) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return range.lowerBound + Int((state >> 33) % UInt64(range.count))
        }
    }

    /// Weights for `count` taps summing to 2^14, some negative (Lanczos lobes), their absolute
    /// values up to the 2 × 2^14 the C functions allow.
    static func weights(_ count: Int, _ random: inout Sequence) -> [Int16] {
        while true {
            var weights = (0..<count).map { _ in random.next(-3_000...9_000) }
            weights[0] += (1 << 14) - weights.reduce(0, +)
            if weights.reduce(0, { $0 + abs($1) }) < 2 << 14 { return weights.map { Int16($0) } }
        }
    }

    @Test("The SSE2 row and column loops compute exactly what the plain loops compute")
    func simdMatchesReference() {
        var random = Sequence(state: 42)
        for trial in 0..<40 {
            let inWidth = random.next(1...97)
            let outWidth = random.next(1...83)
            let stride = random.next(1...13)
            let source = (0..<inWidth * 4).map { _ in UInt8(random.next(0...255)) }
            var starts = [Int](repeating: 0, count: outWidth)
            var counts = [Int](repeating: 0, count: outWidth)
            var weights = [Int16](repeating: 0, count: outWidth * stride)
            for x in 0..<outWidth {
                counts[x] = random.next(1...min(stride, inWidth))
                starts[x] = random.next(0...inWidth - counts[x])
                weights.replaceSubrange(x * stride..<x * stride + counts[x], with: Self.weights(counts[x], &random))
            }
            var fast = [Int16](repeating: 0, count: outWidth * 4)
            var plain = fast
            wi_resample_row(source, &fast, outWidth, starts, counts, weights, stride)
            wi_resample_row_reference(source, &plain, outWidth, starts, counts, weights, stride)
            #expect(fast == plain, "row trial \(trial): \(inWidth) → \(outWidth), stride \(stride)")

            // Rows of a length that is not a multiple of 16 exercise the tail after the vectors.
            let bytes = random.next(1...300)
            let taps = random.next(1...9)
            // Row-pass values: levels × 64, with Lanczos overshoot past 0 and 255.
            let rows = (0..<taps).map { _ in (0..<bytes).map { _ in Int16(random.next(-3_000...19_000)) } }
            let columnWeights = Self.weights(taps, &random)
            var fastColumn = [UInt8](repeating: 0, count: bytes)
            var plainColumn = fastColumn
            withRowPointers(rows) { pointers in
                wi_resample_column(pointers, columnWeights, taps, &fastColumn, bytes)
                wi_resample_column_reference(pointers, columnWeights, taps, &plainColumn, bytes)
            }
            #expect(fastColumn == plainColumn, "column trial \(trial): \(taps) rows of \(bytes) values")
        }
    }

    @Test(
        "Opaque images resized in fixed point stay within one level of the floating-point path",
        arguments: [ResizeFilter.lanczos3, .triangle, .area]
    )
    func closeToFloatingPoint(filter: ResizeFilter) {
        for (from, to) in [((750, 500), (512, 341)), ((97, 61), (13, 9)), ((40, 30), (111, 77))] {
            let opaque = GeneratedImages.noise(width: from.0, height: from.1)
            var withAlpha = opaque
            withAlpha.hasAlpha = true  // every alpha is 255: the premultiplied float path
            let size = PixelSize(width: to.0, height: to.1)
            let fixed = opaque.resized(to: size, filter: filter)
            let float = withAlpha.resized(to: size, filter: filter)
            #expect(!fixed.hasAlpha)
            let difference = GeneratedImages.maxDifference(fixed, float)
            #expect(difference <= 1, "\(filter) \(from) → \(to): \(difference) levels apart")
            for y in 0..<size.height {
                for x in 0..<size.width where fixed[x, y].a != 255 {
                    Issue.record("\(filter) \(from) → \(to): alpha \(fixed[x, y].a) at \(x), \(y)")
                }
            }
        }
    }

    @Test("A flat opaque area stays exactly flat, and a gradient keeps its ends")
    func flatAndGradient() {
        let flat = Bitmap(
            width: 300,
            height: 200,
            hasAlpha: false,
            pixels: [UInt8](repeating: 0, count: 300 * 200 * 4).enumerated().map {
                [UInt8(201), 13, 77, 255][$0.offset % 4]
            }
        )
        let resized = flat.resized(to: PixelSize(width: 123, height: 45))
        #expect(resized.pixels == [UInt8]((0..<123 * 45).flatMap { _ in [201, 13, 77, 255] as [UInt8] }))

        let gradient = GeneratedImages.gradient(width: 640, height: 480).resized(to: PixelSize(width: 320, height: 240))
        #expect(gradient[0, 0].r <= 2 && gradient[319, 0].r >= 253)
        #expect(gradient[0, 0].g <= 2 && gradient[0, 239].g >= 253)
    }

    private func withRowPointers<Result>(
        _ rows: [[Int16]],
        _ body: ([UnsafePointer<Int16>?]) -> Result
    ) -> Result {
        var pointers: [UnsafePointer<Int16>?] = []
        func next(_ index: Int) -> Result {
            if index == rows.count { return body(pointers) }
            return rows[index].withUnsafeBufferPointer { buffer in
                pointers.append(buffer.baseAddress)
                return next(index + 1)
            }
        }
        return next(0)
    }
}
