import Foundation
import WebImageCoders

extension GeneratedImages {
    /// A photo-like opaque image (a fixed seed): smooth tones at several scales (value noise,
    /// like sky and foliage), a few hard-edged shapes and fine grain, so encoders' bytes and
    /// differences follow quality as they do on photos (unlike pure gradients or pure noise).
    /// `detail` from 0 (soft) to 1 (busy) scales the fine octaves and the grain.
    public static func photoLike(width: Int, height: Int, detail: Double = 0.5, seed: UInt64 = 0xF070) -> Bitmap {
        var random = seed
        func next() -> Double {
            random = random &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Double(random >> 11) / Double(1 << 53)
        }
        // Value-noise lattices, coarse to fine, one per channel offset.
        let octaves = [(cells: 3, weight: 0.5), (cells: 9, weight: 0.25), (cells: 27, weight: 0.15 * (0.5 + detail))]
        let lattices = octaves.map { octave in (0..<(octave.cells + 2) * (octave.cells + 2) * 3).map { _ in next() } }
        func smooth(_ t: Double) -> Double { t * t * (3 - 2 * t) }
        let shapes = (0..<6).map { _ in
            (
                x: next() * Double(width), y: next() * Double(height),
                radius: (0.05 + next() * 0.15) * Double(min(width, height)),
                color: [next(), next(), next()]
            )
        }
        var pixels = [UInt8](repeating: 255, count: width * height * 4)
        for y in 0..<height {
            for x in 0..<width {
                var value = [0.0, 0.0, 0.0]
                for (index, octave) in octaves.enumerated() {
                    let fx = Double(x) / Double(width) * Double(octave.cells)
                    let fy = Double(y) / Double(height) * Double(octave.cells)
                    let (cx, cy) = (Int(fx), Int(fy))
                    let (tx, ty) = (smooth(fx - Double(cx)), smooth(fy - Double(cy)))
                    let stride = octave.cells + 2
                    for channel in 0..<3 {
                        func at(_ i: Int, _ j: Int) -> Double { lattices[index][((j * stride) + i) * 3 + channel] }
                        let top = at(cx, cy) * (1 - tx) + at(cx + 1, cy) * tx
                        let bottom = at(cx, cy + 1) * (1 - tx) + at(cx + 1, cy + 1) * tx
                        value[channel] += (top * (1 - ty) + bottom * ty) * octave.weight
                    }
                }
                for shape in shapes {
                    let dx = Double(x) - shape.x
                    let dy = Double(y) - shape.y
                    if dx * dx + dy * dy < shape.radius * shape.radius {
                        for channel in 0..<3 { value[channel] = value[channel] * 0.3 + shape.color[channel] * 0.7 }
                    }
                }
                let grain = (next() - 0.5) * 0.08 * detail
                for channel in 0..<3 {
                    let level = (value[channel] + grain) * 255
                    pixels[(y * width + x) * 4 + channel] = UInt8(max(0, min(255, level.rounded())))
                }
            }
        }
        return Bitmap(width: width, height: height, hasAlpha: false, pixels: pixels)
    }
}
