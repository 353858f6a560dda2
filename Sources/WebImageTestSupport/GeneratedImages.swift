import Foundation
import WebImageCoders

/// Deterministic test pictures, made in memory.
public enum GeneratedImages {
    /// A smooth colour gradient (red across, green down, blue constant), opaque.
    public static func gradient(width: Int, height: Int) -> Bitmap {
        var pixels = [UInt8](repeating: 255, count: width * height * 4)
        for y in 0..<height {
            for x in 0..<width {
                let offset = (y * width + x) * 4
                pixels[offset] = UInt8(x * 255 / max(1, width - 1))
                pixels[offset + 1] = UInt8(y * 255 / max(1, height - 1))
                pixels[offset + 2] = 96
            }
        }
        return Bitmap(width: width, height: height, hasAlpha: false, pixels: pixels)
    }

    /// A gradient whose alpha falls from opaque (left) to transparent (right).
    public static func translucentGradient(width: Int, height: Int) -> Bitmap {
        var bitmap = gradient(width: width, height: height)
        for y in 0..<height {
            for x in 0..<width { bitmap[x, y].a = UInt8(255 - x * 255 / max(1, width - 1)) }
        }
        bitmap.hasAlpha = true
        return bitmap
    }

    /// Flat colour blocks: exact colours survive any lossless codec and most lossy ones closely.
    public static func blocks(width: Int, height: Int, colors: [RGBA], blockSize: Int = 8) -> Bitmap {
        var bitmap = Bitmap(width: width, height: height, fill: colors[0])
        for y in 0..<height {
            for x in 0..<width {
                bitmap[x, y] = colors[(x / blockSize + y / blockSize) % colors.count]
            }
        }
        bitmap.hasAlpha = colors.contains { $0.a != 255 }
        return bitmap
    }

    /// A solid image.
    public static func solid(width: Int, height: Int, color: RGBA) -> Bitmap {
        Bitmap(width: width, height: height, fill: color)
    }

    /// Pseudo-random noise (a fixed seed), the worst case for compression.
    public static func noise(width: Int, height: Int, seed: UInt64 = 0x5EED) -> Bitmap {
        var state = seed
        var pixels = [UInt8](repeating: 255, count: width * height * 4)
        for index in 0..<width * height {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            pixels[index * 4] = UInt8(truncatingIfNeeded: state >> 24)
            pixels[index * 4 + 1] = UInt8(truncatingIfNeeded: state >> 32)
            pixels[index * 4 + 2] = UInt8(truncatingIfNeeded: state >> 40)
        }
        return Bitmap(width: width, height: height, hasAlpha: false, pixels: pixels)
    }

    /// An animation of `count` solid frames, one colour each, `duration` seconds apiece.
    public static func animation(
        width: Int,
        height: Int,
        colors: [RGBA],
        duration: Double = 0.1,
        loopCount: Int = 0,
        format: ImageFormat
    ) -> DecodedImage {
        DecodedImage(
            frames: colors.map { .init(bitmap: solid(width: width, height: height, color: $0), duration: duration) },
            loopCount: loopCount,
            format: format
        )
    }

    /// An animated WebP or GIF of `frames` frames of `width`×`height`, written a frame at a time
    /// (never held whole): grey bands under a square that moves and changes shade every frame,
    /// so no two frames are alike. Frame *i* shows for 40 + 10·(*i* mod 4) ms; it loops 3 times.
    public static func movingSquareAnimation(
        width: Int,
        height: Int,
        frames: Int,
        format: ImageFormat
    ) throws -> Data {
        var options = ImageEncodingOptions()
        options.maxEncodeDuration = nil  // a fixture takes what the machine needs
        let encoder = try AnimationEncoder(
            format: format,
            canvasSize: PixelSize(width: width, height: height),
            frameCount: frames,
            loopCount: 3,
            options: options
        )
        let side = max(1, min(width, height) / 4)
        var pixels = [UInt8](repeating: 0, count: width * height * 4)
        for index in 0..<frames {
            let (left, top) = ((index * 37) % max(1, width - side), (index * 23) % max(1, height - side))
            pixels.withUnsafeMutableBytes { bytes in
                for row in 0..<height {
                    let start = bytes.baseAddress! + row * width * 4
                    memset(start, Int32(row / 32 % 2 == 0 ? 60 : 190), width * 4)
                    if (top..<top + side).contains(row) {
                        memset(start + left * 4, Int32(index * 53 % 256), side * 4)
                    }
                }
            }
            let bitmap = Bitmap(width: width, height: height, hasAlpha: false, pixels: pixels)
            try encoder.add(.init(bitmap: bitmap, duration: 0.04 + 0.01 * Double(index % 4)))
        }
        return try encoder.finish()
    }

    /// The largest per-channel difference between two same-size bitmaps.
    public static func maxDifference(_ a: Bitmap, _ b: Bitmap) -> Int {
        precondition(
            a.width == b.width && a.height == b.height,
            "sizes differ: \(a.width)×\(a.height) vs \(b.width)×\(b.height)"
        )
        var worst = 0
        for y in 0..<a.height {
            for x in 0..<a.width {
                let p = a[x, y]
                let q = b[x, y]
                worst = max(
                    worst,
                    abs(Int(p.r) - Int(q.r)),
                    abs(Int(p.g) - Int(q.g)),
                    abs(Int(p.b) - Int(q.b)),
                    abs(Int(p.a) - Int(q.a))
                )
            }
        }
        return worst
    }

    /// The mean absolute per-channel difference between two same-size bitmaps.
    public static func meanDifference(_ a: Bitmap, _ b: Bitmap) -> Double {
        precondition(a.width == b.width && a.height == b.height)
        var total = 0
        for index in 0..<a.width * a.height * 4 {
            total += abs(Int(a.pixels[index]) - Int(b.pixels[index]))
        }
        return Double(total) / Double(a.width * a.height * 4)
    }
}
