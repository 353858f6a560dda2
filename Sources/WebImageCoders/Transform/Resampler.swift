import CWebImageShims
import Foundation
import Synchronization

/// What a kernel is computed for.
private struct KernelKey: Hashable, Sendable {
    var filter: ResizeFilter
    var inSize: Int
    var outSize: Int
}

/// Kernels computed lately (at most 64; all dropped when full): Lanczos weights take a few
/// thousand `sin` calls per resize.
private let recentKernels = Mutex<[KernelKey: Resampler.Kernel]>([:])

/// Separable two-pass resampling with precomputed weights.
struct Resampler {
    let filter: ResizeFilter

    /// For each output coordinate: the first source index and the normalised weights.
    struct Kernel: Sendable {
        var starts: [Int]
        var counts: [Int]
        var weights: [Float]
        var stride: Int
        /// `weights` scaled by 2^`WI_RESAMPLE_BITS` and rounded, each output's summing to exactly
        /// that (a flat area stays flat); `nil` when an output's weights add up to 2 or more in
        /// absolute value (the fixed-point sums would overflow; no filter here comes close).
        var fixedWeights: [Int16]?
    }

    /// The kernel for `inSize` → `outSize`, computed once for the last few sizes asked (a
    /// server resizing one camera's photos to a few sizes asks for the same ones again).
    func kernel(from inSize: Int, to outSize: Int) -> Kernel {
        let key = KernelKey(filter: filter, inSize: inSize, outSize: outSize)
        if let kept = recentKernels.withLock({ $0[key] }) { return kept }
        let kernel = computeKernel(from: inSize, to: outSize)
        recentKernels.withLock { kernels in
            if kernels.count >= 64 { kernels.removeAll(keepingCapacity: true) }
            kernels[key] = kernel
        }
        return kernel
    }

    private func computeKernel(from inSize: Int, to outSize: Int) -> Kernel {
        let scale = Double(inSize) / Double(outSize)
        let filterScale = max(scale, 1)
        let support = filter.support * filterScale
        let stride = Int(Foundation.ceil(support)) * 2 + 1
        var kernel = Kernel(
            starts: .init(repeating: 0, count: outSize),
            counts: .init(repeating: 0, count: outSize),
            weights: .init(repeating: 0, count: outSize * stride),
            stride: stride
        )
        for out in 0..<outSize {
            let center = (Double(out) + 0.5) * scale
            let first = max(0, Int(Foundation.floor(center - support)))
            let last = min(inSize, Int(Foundation.ceil(center + support)))
            var total = 0.0
            var values: [Double] = []
            for source in first..<last {
                let value = filter.weight((Double(source) + 0.5 - center) / filterScale)
                values.append(value)
                total += value
            }
            // Trim zero weights at both ends so loops stay tight.
            var lower = 0
            var upper = values.count
            while lower < upper, values[lower] == 0 { lower += 1 }
            while upper > lower, values[upper - 1] == 0 { upper -= 1 }
            if lower == upper {  // a sample between taps of a narrow filter: take the nearest
                let nearest = min(inSize - 1, max(0, Int(center)))
                kernel.starts[out] = nearest
                kernel.counts[out] = 1
                kernel.weights[out * stride] = 1
                continue
            }
            kernel.starts[out] = first + lower
            kernel.counts[out] = min(stride, upper - lower)
            for index in 0..<kernel.counts[out] {
                kernel.weights[out * stride + index] = Float(values[lower + index] / total)
            }
        }
        kernel.fixedWeights = kernel.fixedPoint()
        return kernel
    }

    /// Two passes, each output row accumulating the source rows its kernel covers, each filtered
    /// to the output's width just before it is first needed and kept in a small ring (a whole
    /// intermediate image would go out to memory and come back once per tap). Opaque pixels go
    /// through fixed-point passes in C, as libvips filters 8-bit images; pixels with alpha through
    /// premultiplied `SIMD4<Float>`. `nil` when `cancellation` stopped it.
    func resample(_ source: Bitmap, to size: PixelSize, cancellation: CodingCancellation?) -> Bitmap? {
        let horizontal = kernel(from: source.width, to: size.width)
        let vertical = kernel(from: source.height, to: size.height)
        let output: [UInt8]?
        if !source.hasAlpha, let rowWeights = horizontal.fixedWeights, let columnWeights = vertical.fixedWeights {
            let rows = RowRing<Int16>(width: size.width * 4, capacity: vertical.window) { y, out in
                filterOpaque(row: y, of: source, kernel: horizontal, weights: rowWeights, into: out)
            }
            output = FixedColumnPass(size: size, kernel: vertical, weights: columnWeights)
                .run(on: rows, cancellation: cancellation)
        } else {
            var scratch = [SIMD4<Float>](repeating: .zero, count: source.width)
            // The weights, each already in all four lanes (no broadcast per tap).
            let splatWeights = horizontal.weights.map { SIMD4<Float>(repeating: $0) }
            let rows = RowRing<SIMD4<Float>>(width: size.width, capacity: vertical.window) { y, out in
                scratch.withUnsafeMutableBufferPointer { row in
                    filterPremultiplied(
                        row: y,
                        of: source,
                        kernel: horizontal,
                        weights: splatWeights,
                        scratch: row,
                        into: out
                    )
                }
            }
            output = ColumnPass(size: size, kernel: vertical, opaque: !source.hasAlpha)
                .run(on: rows, cancellation: cancellation)
        }
        return output.map { Bitmap(width: size.width, height: size.height, hasAlpha: source.hasAlpha, pixels: $0) }
    }

    /// Source row `y` of opaque RGBA filtered to the output's width in fixed point.
    private func filterOpaque(
        row y: Int,
        of source: Bitmap,
        kernel: Kernel,
        weights: [Int16],
        into out: UnsafeMutablePointer<Int16>
    ) {
        source.pixels.withUnsafeBufferPointer { src in
            weights.withUnsafeBufferPointer { weights in
                kernel.starts.withUnsafeBufferPointer { starts in
                    kernel.counts.withUnsafeBufferPointer { counts in
                        wi_resample_row(
                            src.baseAddress! + y * source.bytesPerRow,
                            out,
                            starts.count,
                            starts.baseAddress!,
                            counts.baseAddress!,
                            weights.baseAddress!,
                            kernel.stride
                        )
                    }
                }
            }
        }
    }

    /// Source row `y` (premultiplied when there is alpha) filtered to the output's width as
    /// vectors, through `scratch` (the row as floats).
    private func filterPremultiplied(
        row y: Int,
        of source: Bitmap,
        kernel: Kernel,
        weights: [SIMD4<Float>],
        scratch row: UnsafeMutableBufferPointer<SIMD4<Float>>,
        into out: UnsafeMutablePointer<SIMD4<Float>>
    ) {
        // Bytes to floats as one flat loop, which the compiler vectorises; then premultiply when
        // there is alpha.
        source.pixels.withUnsafeBufferPointer { src in
            let bytes = src.baseAddress! + y &* source.bytesPerRow
            row.withMemoryRebound(to: Float.self) { floats in
                for index in 0..<source.width &* 4 { floats[index] = Float(bytes[index]) }
            }
        }
        if source.hasAlpha {
            for x in 0..<source.width {
                let scale = row[x].w * (1 / 255)
                row[x] *= SIMD4(scale, scale, scale, 1)
            }
        }
        weights.withUnsafeBufferPointer { weights in
            kernel.starts.withUnsafeBufferPointer { starts in
                kernel.counts.withUnsafeBufferPointer { counts in
                    for x in 0..<starts.count {
                        // Four running sums: one would wait on each add's latency.
                        var sum0 = SIMD4<Float>.zero
                        var sum1 = SIMD4<Float>.zero
                        var sum2 = SIMD4<Float>.zero
                        var sum3 = SIMD4<Float>.zero
                        let taps = row.baseAddress! + starts[x]
                        let tapWeights = weights.baseAddress! + x &* kernel.stride
                        let count = counts[x]
                        var k = 0
                        while k &+ 4 <= count {
                            sum0 += tapWeights[k] * taps[k]
                            sum1 += tapWeights[k &+ 1] * taps[k &+ 1]
                            sum2 += tapWeights[k &+ 2] * taps[k &+ 2]
                            sum3 += tapWeights[k &+ 3] * taps[k &+ 3]
                            k &+= 4
                        }
                        while k < count {
                            sum0 += tapWeights[k] * taps[k]
                            k &+= 1
                        }
                        out[x] = (sum0 + sum1) + (sum2 + sum3)
                    }
                }
            }
        }
    }
}

extension Resampler.Kernel {
    /// How many consecutive input lines must be kept so that, computing them in order as the
    /// outputs ask, every output's taps are among the last ones computed.
    var window: Int {
        var computed = 0
        var window = 1
        for (start, count) in zip(starts, counts) {
            computed = max(computed, start + count)
            window = max(window, computed - start)
        }
        return window
    }

    /// `weights` in fixed point (see `fixedWeights`).
    func fixedPoint() -> [Int16]? {
        let one = 1 << WI_RESAMPLE_BITS
        var fixed = [Int16](repeating: 0, count: weights.count)
        for (out, count) in counts.enumerated() {
            let base = out * stride
            var total = 0
            var magnitude = 0
            var largest = base
            for index in base..<base + count {
                let value = Int((weights[index] * Float(one)).rounded())
                magnitude += abs(value)
                guard magnitude < 2 * one else { return nil }
                fixed[index] = Int16(value)
                total += value
                if weights[index] > weights[largest] { largest = index }
            }
            // The rounding error (a few units) goes to the largest weight, where it matters least.
            fixed[largest] = Int16(Int(fixed[largest]) + one - total)
        }
        return fixed
    }
}

/// Filtered rows for `Resampler.resample`'s column pass: computed in order by `filter`, kept in a
/// ring of `capacity` rows of `width` elements, so the column pass reads them while they are still
/// in cache. Elements are bitwise-copyable (bytes, float vectors), so a slot needs no
/// deinitialisation before it is overwritten or the storage freed.
private final class RowRing<Element: BitwiseCopyable> {
    /// How many rows have been filtered, from the top.
    private(set) var computed = 0
    private let capacity: Int
    private let width: Int
    private let storage: UnsafeMutableBufferPointer<Element>
    private let filter: (_ row: Int, _ into: UnsafeMutablePointer<Element>) -> Void

    /// Slots are written by `filter` before they are read.
    init(width: Int, capacity: Int, filter: @escaping (_ row: Int, _ into: UnsafeMutablePointer<Element>) -> Void) {
        self.capacity = capacity
        self.width = width
        self.filter = filter
        storage = .allocate(capacity: capacity * width)
    }

    deinit { storage.deallocate() }

    /// Row `index`'s `width` elements, valid until `capacity` more rows are filtered.
    func row(_ index: Int) -> UnsafePointer<Element> {
        precondition(index < computed && index >= computed - capacity, "row \(index) is not in the ring")
        return UnsafePointer(storage.baseAddress! + (index % capacity) &* width)
    }

    /// Filters every row output row `y` of `kernel` reads; `false` when `cancellation` stopped
    /// it (looked at every 32 output rows, and every 32 rows filtered).
    func ready(forOutput y: Int, of kernel: Resampler.Kernel, cancellation: CodingCancellation?) -> Bool {
        if y & 31 == 0, cancellation?.isCancelled == true { return false }
        return fill(through: kernel.starts[y] + kernel.counts[y], cancellation: cancellation)
    }

    /// Filters rows until the first `end` are done; `false` when `cancellation` stopped it.
    private func fill(through end: Int, cancellation: CodingCancellation?) -> Bool {
        while computed < end {
            if computed & 31 == 0, cancellation?.isCancelled == true { return false }
            filter(computed, storage.baseAddress! + (computed % capacity) &* width)
            computed += 1
        }
        return true
    }
}

/// The fixed-point column pass of `Resampler.resample` for opaque pixels: each output row
/// summed from the filtered rows its kernel covers, rounded to bytes.
private struct FixedColumnPass {
    var size: PixelSize
    var kernel: Resampler.Kernel
    var weights: [Int16]

    /// The output's bytes; `nil` when `cancellation` stopped it.
    func run(on rows: RowRing<Int16>, cancellation: CodingCancellation?) -> [UInt8]? {
        let rowBytes = size.width * 4
        var stopped = false
        var taps = [UnsafePointer<Int16>?](repeating: nil, count: kernel.stride)
        var output = [UInt8](repeating: 0, count: rowBytes * size.height)
        output.withUnsafeMutableBufferPointer { dst in
            weights.withUnsafeBufferPointer { weights in
                for y in 0..<size.height {
                    guard rows.ready(forOutput: y, of: kernel, cancellation: cancellation) else {
                        stopped = true
                        return
                    }
                    let start = kernel.starts[y]
                    let count = kernel.counts[y]
                    for k in 0..<count { taps[k] = rows.row(start + k) }
                    wi_resample_column(
                        taps,
                        weights.baseAddress! + y * kernel.stride,
                        count,
                        dst.baseAddress! + y * rowBytes,
                        rowBytes
                    )
                }
            }
        }
        return withExtendedLifetime(rows) { stopped ? nil : output }
    }
}

/// The floating-point column pass of `Resampler.resample`: each output row accumulated from the
/// filtered rows its kernel covers, un-premultiplied when there is alpha, clamped and rounded.
private struct ColumnPass {
    var size: PixelSize
    var kernel: Resampler.Kernel
    var opaque: Bool

    /// The output's bytes; `nil` when `cancellation` stopped it.
    func run(on rows: RowRing<SIMD4<Float>>, cancellation: CodingCancellation?) -> [UInt8]? {
        let vertical = kernel
        let outWidth = size.width
        var stopped = false
        var output = [UInt8](repeating: 0, count: outWidth * size.height * 4)
        var accumulator = [SIMD4<Float>](repeating: .zero, count: outWidth)
        output.withUnsafeMutableBufferPointer { dst in
            accumulator.withUnsafeMutableBufferPointer { acc in
                for y in 0..<size.height {
                    guard rows.ready(forOutput: y, of: vertical, cancellation: cancellation) else {
                        stopped = true
                        return
                    }
                    let start = vertical.starts[y]
                    let count = vertical.counts[y]
                    for x in 0..<outWidth { acc[x] = .zero }
                    // Four source rows per sweep, then two: fewer loads and stores of the sums.
                    let weightBase = y * vertical.stride
                    var k = 0
                    while k &+ 4 <= count {
                        let w0 = vertical.weights[weightBase + k]
                        let w1 = vertical.weights[weightBase + k + 1]
                        let w2 = vertical.weights[weightBase + k + 2]
                        let w3 = vertical.weights[weightBase + k + 3]
                        let row0 = rows.row(start + k)
                        let row1 = rows.row(start + k + 1)
                        let row2 = rows.row(start + k + 2)
                        let row3 = rows.row(start + k + 3)
                        for x in 0..<outWidth {
                            acc[x] += (w0 * row0[x] + w1 * row1[x]) + (w2 * row2[x] + w3 * row3[x])
                        }
                        k &+= 4
                    }
                    while k &+ 2 <= count {
                        let w0 = vertical.weights[weightBase + k]
                        let w1 = vertical.weights[weightBase + k + 1]
                        let row0 = rows.row(start + k)
                        let row1 = rows.row(start + k + 1)
                        for x in 0..<outWidth { acc[x] += w0 * row0[x] + w1 * row1[x] }
                        k &+= 2
                    }
                    if k < count {
                        let w = vertical.weights[weightBase + k]
                        let row = rows.row(start + k)
                        for x in 0..<outWidth { acc[x] += w * row[x] }
                    }
                    if !opaque {
                        // Un-premultiply; a (nearly) transparent pixel keeps no colour.
                        for x in 0..<outWidth {
                            let alpha = acc[x].w
                            let inverse: Float = alpha > 0.5 ? 255 / alpha : 0
                            acc[x] *= SIMD4(inverse, inverse, inverse, 1)
                        }
                    }
                    // Clamp and round half up, vectorised in C.
                    acc.withMemoryRebound(to: Float.self) { floats in
                        wi_floats_to_bytes(floats.baseAddress!, dst.baseAddress! + y * outWidth * 4, outWidth * 4)
                    }
                }
            }
        }
        return withExtendedLifetime(rows) { stopped ? nil : output }
    }
}
