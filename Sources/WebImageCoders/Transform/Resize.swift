import Foundation

/// The filter ``Bitmap/resized(to:filter:)`` samples with.
public enum ResizeFilter: Sendable, Hashable {
    /// Area averaging: each output pixel is the exact average of the source area it covers.
    case area
    /// Linear interpolation (a tent filter widened when shrinking).
    case triangle
    /// Lanczos with three lobes: the sharpest; the default.
    case lanczos3

    var support: Double {
        switch self {
        case .area: 0.5
        case .triangle: 1
        case .lanczos3: 3
        }
    }

    func weight(_ x: Double) -> Double {
        switch self {
        case .area:
            return x >= -0.5 && x < 0.5 ? 1 : 0
        case .triangle:
            let x = abs(x)
            return x < 1 ? 1 - x : 0
        case .lanczos3:
            let x = abs(x)
            guard x < 3 else { return 0 }
            guard x > 1e-8 else { return 1 }
            let pix = Double.pi * x
            return 3 * Foundation.sin(pix) * Foundation.sin(pix / 3) / (pix * pix)
        }
    }
}

extension Bitmap {
    /// A copy scaled to `size` (any aspect ratio), resampled in premultiplied alpha so transparent
    /// pixels do not bleed their colour into opaque neighbours.
    ///
    /// Large reductions first average integer blocks (exact area averaging), then filter the rest
    /// of the way, which keeps the cost near-linear in the source size. Each axis is pre-reduced on
    /// its own, so an extreme aspect ratio (1×100,000,000 to 1×64) costs what its pixels cost.
    public func resized(to size: PixelSize, filter: ResizeFilter = .lanczos3) -> Bitmap {
        // Without a cancellation nothing stops it.
        resized(to: size, filter: filter, cancellation: nil)!
    }

    /// ``resized(to:filter:)`` that stops between rows once `cancellation` is raised, returning
    /// `nil` then (a timeout or a client gone while an 8192² enlargement is computed).
    public func resized(
        to size: PixelSize,
        filter: ResizeFilter = .lanczos3,
        cancellation: CodingCancellation?
    ) -> Bitmap? {
        precondition(size.width > 0 && size.height > 0, "cannot resize to \(size)")
        if size.width == width && size.height == height { return self }
        if cancellation?.isCancelled == true { return nil }
        // Box-reduce an axis while the filter would still have more than 2× to go on it. Area
        // filtering is exact as it is, and pre-reduced only when its kernels would be long.
        let minimumFactor = filter == .area ? 16 : 2
        let factorX = width / size.width / 2
        let factorY = height / size.height / 2
        if factorX >= minimumFactor || factorY >= minimumFactor {
            let reduced = boxReduced(
                horizontally: factorX >= minimumFactor ? factorX : 1,
                vertically: factorY >= minimumFactor ? factorY : 1
            )
            return reduced.resized(to: size, filter: filter, cancellation: cancellation)
        }
        return Resampler(filter: filter).resample(self, to: size, cancellation: cancellation)
    }

    /// Averages `horizontal` × `vertical` blocks (edge blocks are partial), premultiplied.
    func boxReduced(horizontally factorX: Int, vertically factorY: Int) -> Bitmap {
        let outWidth = (width + factorX - 1) / factorX
        let outHeight = (height + factorY - 1) / factorY
        // 64-bit sums: a block of a 1×100,000,000 image holds millions of 255 × 255 products.
        var sums = [UInt64](repeating: 0, count: outWidth * 4)
        var out = [UInt8](repeating: 0, count: outWidth * outHeight * 4)
        pixels.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst in
                for outY in 0..<outHeight {
                    for i in 0..<sums.count { sums[i] = 0 }
                    let y0 = outY * factorY
                    let y1 = min(y0 + factorY, height)
                    for y in y0..<y1 {
                        var offset = y * bytesPerRow
                        for x in 0..<width {
                            let a = UInt64(src[offset + 3])
                            let base = (x / factorX) * 4
                            sums[base] &+= UInt64(src[offset]) * a
                            sums[base + 1] &+= UInt64(src[offset + 1]) * a
                            sums[base + 2] &+= UInt64(src[offset + 2]) * a
                            sums[base + 3] &+= a
                            offset += 4
                        }
                    }
                    let rowsCovered = UInt64(y1 - y0)
                    for outX in 0..<outWidth {
                        let columns = UInt64(min((outX + 1) * factorX, width) - outX * factorX)
                        let base = outX * 4
                        let alphaSum = sums[base + 3]
                        let target = (outY * outWidth + outX) * 4
                        let count = columns * rowsCovered
                        dst[target + 3] = UInt8((alphaSum + count / 2) / count)
                        if alphaSum > 0 {
                            for c in 0..<3 {
                                dst[target + c] = UInt8(min(255, (sums[base + c] + alphaSum / 2) / alphaSum))
                            }
                        }
                    }
                }
            }
        }
        return Bitmap(width: outWidth, height: outHeight, hasAlpha: hasAlpha, pixels: out)
    }
}
