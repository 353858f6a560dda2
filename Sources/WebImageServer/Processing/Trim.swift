import WebImage
import WebImageCoders

/// imgproxy's `trim:THRESHOLD:COLOR:EQUAL_HOR:EQUAL_VER`: the border of one colour around the
/// picture is cut off before anything else.
public struct Trim: Sendable, Hashable, CustomStringConvertible {
    /// How far (0–255, any channel) a pixel may be from the border colour and still be border.
    /// Default 10, as imgproxy's.
    public var threshold: Double = 10
    /// The border colour; `nil`: the top-left pixel's (imgproxy's "smart" trim).
    public var color: RGBA?
    /// Cut as much from the right as from the left (the smaller of the two).
    public var equalHorizontal = false
    /// Cut as much from the bottom as from the top (the smaller of the two).
    public var equalVertical = false

    public init(threshold: Double = 10, color: RGBA? = nil, equalHorizontal: Bool = false, equalVertical: Bool = false)
    {
        self.threshold = threshold
        self.color = color
        self.equalHorizontal = equalHorizontal
        self.equalVertical = equalVertical
    }

    public var description: String {
        "\(threshold):\(color.map { "\($0.r),\($0.g),\($0.b)" } ?? "-"):\(equalHorizontal):\(equalVertical)"
    }
}

/// Finds what `trim` keeps, as libvips's `find_trim` does for imgproxy: transparency flattened
/// onto magenta, each channel median-filtered over 3×3 (edges repeated), and a pixel is content
/// where any channel differs from the border colour by more than the threshold.
enum TrimFinder {
    /// The rectangle to keep, or `nil` when there is nothing to cut (or nothing but border).
    static func window(in bitmap: Bitmap, trim: Trim, cancellation: CodingCancellation?) -> CropTransformer? {
        let pixels = FlattenedPixels(bitmap)
        let background: [Double] =
            trim.color.map { [Double($0.r), Double($0.g), Double($0.b)] }
            ?? (0..<3).map { Double(pixels.value(x: 0, y: 0, channel: $0)) }
        guard
            let hits = contentHits(
                pixels,
                background: background,
                threshold: trim.threshold,
                cancellation: cancellation
            )
        else { return nil }
        var left = hits.columns.firstIndex(of: true) ?? bitmap.width
        let fromRight = hits.columns.reversed().firstIndex(of: true) ?? bitmap.width
        var top = hits.rows.firstIndex(of: true) ?? bitmap.height
        let fromBottom = hits.rows.reversed().firstIndex(of: true) ?? bitmap.height
        var width = bitmap.width - fromRight - left
        var height = bitmap.height - fromBottom - top
        guard width > 0, height > 0 else { return nil }
        if trim.equalHorizontal {
            let right = bitmap.width - left - width
            if right > left { width += right - left } else { (left, width) = (right, width + left - right) }
        }
        if trim.equalVertical {
            let bottom = bitmap.height - top - height
            if bottom > top { height += bottom - top } else { (top, height) = (bottom, height + top - bottom) }
        }
        guard width != bitmap.width || height != bitmap.height else { return nil }
        return CropTransformer(x: left, y: top, width: width, height: height)
    }

    /// Which columns and which rows hold content. A pixel whose column and row are both known
    /// to hold content is not filtered again, so the work is mostly at the border. `nil` when
    /// cancelled.
    private static func contentHits(
        _ pixels: FlattenedPixels,
        background: [Double],
        threshold: Double,
        cancellation: CodingCancellation?
    ) -> (columns: [Bool], rows: [Bool])? {
        var columns = [Bool](repeating: false, count: pixels.width)
        var rows = [Bool](repeating: false, count: pixels.height)
        for y in 0..<pixels.height {
            if y % 64 == 0, cancellation?.isCancelled == true { return nil }
            for x in 0..<pixels.width where !(columns[x] && rows[y]) {
                for channel in 0..<3
                where abs(Double(pixels.median(x: x, y: y, channel: channel)) - background[channel]) > threshold {
                    columns[x] = true
                    rows[y] = true
                    break
                }
            }
        }
        return (columns, rows)
    }
}

/// A bitmap's colour channels with transparency flattened onto magenta (imgproxy's trim
/// background), read with edges repeated.
private struct FlattenedPixels {
    let bitmap: Bitmap
    var width: Int { bitmap.width }
    var height: Int { bitmap.height }

    init(_ bitmap: Bitmap) { self.bitmap = bitmap }

    func value(x: Int, y: Int, channel: Int) -> UInt8 {
        let clampedX = min(max(x, 0), width - 1)
        let clampedY = min(max(y, 0), height - 1)
        let offset = clampedY * bitmap.bytesPerRow + clampedX * 4
        let stored = bitmap.pixels[offset + channel]
        guard bitmap.hasAlpha else { return stored }
        let alpha = Int(bitmap.pixels[offset + 3])
        let magenta = channel == 1 ? 0 : 255
        return UInt8((Int(stored) * alpha + magenta * (255 - alpha) + 127) / 255)
    }

    /// The median of the 3×3 neighbourhood's values of `channel`.
    func median(x: Int, y: Int, channel: Int) -> UInt8 {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 9) { values in
            var count = 0
            for dy in -1...1 {
                for dx in -1...1 {
                    // Insertion into the sorted prefix.
                    let next = value(x: x + dx, y: y + dy, channel: channel)
                    var index = count
                    while index > 0, values[index - 1] > next {
                        values[index] = values[index - 1]
                        index -= 1
                    }
                    values[index] = next
                    count += 1
                }
            }
            return values[4]
        }
    }
}
