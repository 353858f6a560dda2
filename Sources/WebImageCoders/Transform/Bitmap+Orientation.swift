extension Bitmap {
    /// The pixels turned upright for `orientation`: rotated and/or mirrored, with width and
    /// height swapped for orientations 5–8.
    public func applyingOrientation(_ orientation: ImageOrientation) -> Bitmap {
        guard orientation != .up else { return self }
        let outWidth = orientation.swapsDimensions ? height : width
        let outHeight = orientation.swapsDimensions ? width : height
        let w = width
        let h = height
        // Maps each output pixel to the stored pixel it shows.
        let sourceOf: (Int, Int) -> (Int, Int)
        switch orientation {
        case .up: sourceOf = { x, y in (x, y) }
        case .upMirrored: sourceOf = { x, y in (w - 1 - x, y) }
        case .down: sourceOf = { x, y in (w - 1 - x, h - 1 - y) }
        case .downMirrored: sourceOf = { x, y in (x, h - 1 - y) }
        case .leftMirrored: sourceOf = { x, y in (y, x) }
        case .right: sourceOf = { x, y in (y, h - 1 - x) }
        case .rightMirrored: sourceOf = { x, y in (w - 1 - y, h - 1 - x) }
        case .left: sourceOf = { x, y in (w - 1 - y, x) }
        }
        var out = [UInt8](repeating: 0, count: outWidth * outHeight * 4)
        pixels.withUnsafeBytes { src in
            out.withUnsafeMutableBytes { dst in
                let srcPixels = src.bindMemory(to: UInt32.self)
                let dstPixels = dst.bindMemory(to: UInt32.self)
                let srcRowPixels = bytesPerRow / 4
                for y in 0..<outHeight {
                    for x in 0..<outWidth {
                        let (sx, sy) = sourceOf(x, y)
                        dstPixels[y * outWidth + x] = srcPixels[sy * srcRowPixels + sx]
                    }
                }
            }
        }
        return Bitmap(width: outWidth, height: outHeight, hasAlpha: hasAlpha, pixels: out)
    }
}
