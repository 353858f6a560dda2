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
            let colors = histogram.keys.sorted()
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
    /// `colors` boxes, then averages each box. Colours start in key order (not the histogram's
    /// hash order), so the same image always gets the same palette; each box's widest channel is
    /// measured once, when the box is made.
    private static func medianCut(_ histogram: [UInt32: Int], colors: Int) -> [RGBA] {
        typealias Entry = (color: RGBA, count: Int)
        struct Box {
            var entries: ArraySlice<Entry>
            var channel = 0
            var range = -1

            init(_ entries: ArraySlice<Entry>) {
                self.entries = entries
                for c in 0..<3 {
                    var low = 255
                    var high = 0
                    for entry in entries {
                        let value = ColorQuantizer.channel(entry.color, c)
                        low = min(low, value)
                        high = max(high, value)
                    }
                    if high - low > range { (channel, range) = (c, high - low) }
                }
            }
        }
        let sortedKeys = histogram.keys.sorted()
        var boxes = [Box(ArraySlice(sortedKeys.map { (rgba($0), histogram[$0]!) }))]
        while boxes.count < colors {
            var chosen: Int?
            for (index, box) in boxes.enumerated() where box.entries.count > 1 && box.range > 0 {
                if chosen.map({ box.range > boxes[$0].range }) ?? true { chosen = index }
            }
            guard let index = chosen else { break }
            let split = boxes[index].channel
            let sorted = boxes[index].entries.sorted {
                let (a, b) = (channel($0.color, split), channel($1.color, split))
                return a != b ? a < b : key($0.color) < key($1.color)
            }
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
            boxes[index] = Box(sorted[..<cut])
            boxes.append(Box(sorted[cut...]))
        }
        return boxes.map { box in
            let total = max(1, box.entries.reduce(0) { $0 + $1.count })
            func average(_ c: Int) -> UInt8 {
                UInt8(box.entries.reduce(0) { $0 + channel($1.color, c) * $1.count } / total)
            }
            return RGBA(r: average(0), g: average(1), b: average(2))
        }
    }

    private static func channel(_ color: RGBA, _ channel: Int) -> Int {
        channel == 0 ? Int(color.r) : channel == 1 ? Int(color.g) : Int(color.b)
    }

    private static func key(_ color: RGBA) -> UInt32 {
        UInt32(color.r) << 16 | UInt32(color.g) << 8 | UInt32(color.b)
    }
}
