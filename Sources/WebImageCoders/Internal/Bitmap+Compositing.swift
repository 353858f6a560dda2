/// A rectangle in pixel coordinates.
struct PixelRect: Equatable {
    var x: Int
    var y: Int
    var width: Int
    var height: Int

    /// The part of the rectangle inside a `size` canvas (possibly empty).
    func clipped(to size: PixelSize) -> PixelRect {
        let left = max(0, x)
        let top = max(0, y)
        let right = min(size.width, x + width)
        let bottom = min(size.height, y + height)
        return PixelRect(x: left, y: top, width: max(0, right - left), height: max(0, bottom - top))
    }

    var isEmpty: Bool { width <= 0 || height <= 0 }
}

extension Bitmap {
    /// Copies `rect` out into its own bitmap.
    func cropped(to rect: PixelRect) -> Bitmap {
        var out = [UInt8](repeating: 0, count: rect.width * rect.height * 4)
        for row in 0..<rect.height {
            let from = (rect.y + row) * bytesPerRow + rect.x * 4
            out.replaceSubrange(
                row * rect.width * 4..<(row + 1) * rect.width * 4,
                with: pixels[from..<from + rect.width * 4]
            )
        }
        return Bitmap(width: rect.width, height: rect.height, hasAlpha: hasAlpha, pixels: out)
    }

    /// Sets every pixel of `rect` to transparent black.
    mutating func clear(_ rect: PixelRect) {
        let rect = rect.clipped(to: PixelSize(width: width, height: height))
        guard !rect.isEmpty else { return }
        let stride = bytesPerRow
        pixels.withUnsafeMutableBufferPointer { buffer in
            for row in rect.y..<rect.y + rect.height {
                let start = row * stride + rect.x * 4
                buffer.baseAddress!.advanced(by: start).update(repeating: 0, count: rect.width * 4)
            }
        }
    }

    /// Draws `source` with its top-left corner at (`x`, `y`), clipped to this bitmap. With
    /// `blend` the source is composited over what is there (straight-alpha "over"); without, it
    /// replaces it.
    mutating func draw(_ source: Bitmap, atX x: Int, y: Int, blend: Bool) {
        let rect = PixelRect(x: x, y: y, width: source.width, height: source.height)
            .clipped(to: PixelSize(width: width, height: height))
        guard !rect.isEmpty else { return }
        let stride = bytesPerRow
        source.pixels.withUnsafeBufferPointer { src in
            pixels.withUnsafeMutableBufferPointer { dst in
                for row in 0..<rect.height {
                    let srcStart = (rect.y - y + row) * source.bytesPerRow + (rect.x - x) * 4
                    let dstStart = (rect.y + row) * stride + rect.x * 4
                    if !blend {
                        dst.baseAddress!.advanced(by: dstStart)
                            .update(from: src.baseAddress!.advanced(by: srcStart), count: rect.width * 4)
                        continue
                    }
                    for column in 0..<rect.width {
                        let s = srcStart + column * 4
                        let d = dstStart + column * 4
                        let sa = UInt32(src[s + 3])
                        if sa == 255 {
                            dst[d] = src[s]
                            dst[d + 1] = src[s + 1]
                            dst[d + 2] = src[s + 2]
                            dst[d + 3] = 255
                        } else if sa != 0 {
                            let da = UInt32(dst[d + 3]) * (255 - sa) / 255
                            let outA = sa + da
                            for c in 0..<3 {
                                dst[d + c] = UInt8(
                                    (UInt32(src[s + c]) * sa + UInt32(dst[d + c]) * da + outA / 2) / outA
                                )
                            }
                            dst[d + 3] = UInt8(outA)
                        }
                    }
                }
            }
        }
    }
}
