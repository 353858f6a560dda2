/// Reduces an RGBA bitmap to a palette of at most `maxColors` colours plus, when needed, one
/// transparent index (alpha below 128 counts as transparent). Exact when the image has few enough
/// colours; otherwise median cut over the distinct colours, weighted by pixel count.
struct ColorQuantizer {
    struct Result {
        var palette: [RGBA]
        var transparentIndex: Int?
        var indices: [UInt8]
    }

    var maxColors = 256

    func quantize(_ bitmap: Bitmap) -> Result {
        var histogram: [UInt32: Int] = [:]
        var hasTransparency = false
        for y in 0..<bitmap.height {
            var offset = y * bitmap.bytesPerRow
            for _ in 0..<bitmap.width {
                if bitmap.pixels[offset + 3] < 128 {
                    hasTransparency = true
                } else {
                    histogram[Self.key(bitmap.pixels, offset), default: 0] += 1
                }
                offset += 4
            }
        }
        let colorBudget = maxColors - (hasTransparency ? 1 : 0)
        var palette: [RGBA]
        var lookup: (UInt32) -> UInt8
        if histogram.count <= colorBudget {
            let colors = Array(histogram.keys)
            var indexOf: [UInt32: UInt8] = [:]
            for (index, color) in colors.enumerated() { indexOf[color] = UInt8(index) }
            palette = colors.map(Self.rgba)
            lookup = { indexOf[$0] ?? 0 }
        } else {
            palette = Self.medianCut(histogram, colors: colorBudget)
            // Nearest palette entry for every 5-bit-per-channel colour, filled lazily.
            var table = [Int16](repeating: -1, count: 1 << 15)
            let entries = palette
            lookup = { key in
                let red = (key >> 19) & 0x1F
                let green = (key >> 11) & 0x1F
                let blue = (key >> 3) & 0x1F
                let index = Int(red << 10 | green << 5 | blue)
                if table[index] < 0 { table[index] = Int16(Self.nearest(Self.rgba(key), in: entries)) }
                return UInt8(table[index])
            }
        }
        if palette.isEmpty { palette = [RGBA(r: 0, g: 0, b: 0)] }
        let transparentIndex = hasTransparency ? palette.count : nil
        if hasTransparency { palette.append(RGBA(r: 0, g: 0, b: 0, a: 0)) }
        var indices = [UInt8](repeating: 0, count: bitmap.width * bitmap.height)
        for y in 0..<bitmap.height {
            var offset = y * bitmap.bytesPerRow
            for x in 0..<bitmap.width {
                indices[y * bitmap.width + x] =
                    bitmap.pixels[offset + 3] < 128 ? UInt8(transparentIndex!) : lookup(Self.key(bitmap.pixels, offset))
                offset += 4
            }
        }
        return Result(palette: palette, transparentIndex: transparentIndex, indices: indices)
    }

    private static func key(_ pixels: [UInt8], _ offset: Int) -> UInt32 {
        UInt32(pixels[offset]) << 16 | UInt32(pixels[offset + 1]) << 8 | UInt32(pixels[offset + 2])
    }

    private static func rgba(_ key: UInt32) -> RGBA {
        RGBA(r: UInt8(key >> 16 & 0xFF), g: UInt8(key >> 8 & 0xFF), b: UInt8(key & 0xFF))
    }

    private static func nearest(_ color: RGBA, in palette: [RGBA]) -> Int {
        var best = 0
        var bestDistance = Int.max
        for (index, entry) in palette.enumerated() {
            let dr = Int(color.r) - Int(entry.r)
            let dg = Int(color.g) - Int(entry.g)
            let db = Int(color.b) - Int(entry.b)
            let distance = dr * dr * 2 + dg * dg * 4 + db * db * 3
            if distance < bestDistance {
                bestDistance = distance
                best = index
            }
        }
        return best
    }

    /// Splits the colour box with the widest channel at its weighted median until there are
    /// `colors` boxes, then averages each box.
    private static func medianCut(_ histogram: [UInt32: Int], colors: Int) -> [RGBA] {
        typealias Entry = (color: RGBA, count: Int)
        var boxes: [[Entry]] = [histogram.map { (rgba($0.key), $0.value) }]
        func channel(_ color: RGBA, _ channel: Int) -> Int {
            channel == 0 ? Int(color.r) : channel == 1 ? Int(color.g) : Int(color.b)
        }
        func widest(_ box: [Entry]) -> (channel: Int, range: Int) {
            var best = (channel: 0, range: -1)
            for c in 0..<3 {
                let values = box.map { channel($0.color, c) }
                let range = (values.max() ?? 0) - (values.min() ?? 0)
                if range > best.range { best = (c, range) }
            }
            return best
        }
        while boxes.count < colors {
            guard
                let (index, split) = boxes.enumerated()
                    .filter({ $0.element.count > 1 })
                    .map({ ($0.offset, widest($0.element)) })
                    .max(by: { $0.1.range < $1.1.range }), split.range > 0
            else { break }
            let sorted = boxes[index].sorted { channel($0.color, split.channel) < channel($1.color, split.channel) }
            let total = sorted.reduce(0) { $0 + $1.count }
            var running = 0
            var cut = 1
            for (position, entry) in sorted.enumerated() {
                running += entry.count
                if running * 2 >= total {
                    cut = max(1, min(sorted.count - 1, position + 1))
                    break
                }
            }
            boxes[index] = Array(sorted[..<cut])
            boxes.append(Array(sorted[cut...]))
        }
        return boxes.map { box in
            let total = max(1, box.reduce(0) { $0 + $1.count })
            func average(_ c: Int) -> UInt8 { UInt8(box.reduce(0) { $0 + channel($1.color, c) * $1.count } / total) }
            return RGBA(r: average(0), g: average(1), b: average(2))
        }
    }
}
