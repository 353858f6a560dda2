import Foundation
import WebImage

/// The images `webimage demo` serves, made with our own encoders.
struct DemoImage: Sendable {
    var name: String
    var kind: String
    var data: Data
    var contentType: String
    /// Send the body slowly in chunks (shows progress and progressive previews).
    var drip: Bool
}

enum DemoImages {
    /// A landscape-like scene: sky gradient, sun, hills, with fine texture (`grain`) so JPEG has
    /// work to do.
    static func scene(width: Int, height: Int, seed: UInt32, alpha: Bool = false, grain: Bool = true) -> Bitmap {
        let sunX = Double(width) * (0.2 + Double(seed % 60) / 100)
        let sunY = Double(height) * 0.3
        let sunRadiusSquared = pow(Double(min(width, height)) * 0.12, 2)
        let hills = (0..<width).map { Double(height) * 0.6 + 40 * sin(Double($0) / Double(width) * 9 + Double(seed)) }
        var pixels = [UInt8](repeating: 255, count: width * height * 4)
        pixels.withUnsafeMutableBufferPointer { buffer in
            var noise = seed | 1
            for y in 0..<height {
                let sky = Double(y) / (Double(height) * 0.62)
                let dy = Double(y) - sunY
                for x in 0..<width {
                    noise ^= noise << 13
                    noise ^= noise >> 17
                    noise ^= noise << 5
                    let grain = grain ? Double(noise % 17) - 8 : 0
                    var (r, g, b): (Double, Double, Double)
                    if Double(y) > hills[x] {
                        let depth = (Double(y) - hills[x]) / Double(height)
                        (r, g, b) = (40 + 60 * depth, 110 - 50 * depth, 50)
                    } else {
                        (r, g, b) = (90 + 120 * sky, 150 + 70 * sky, 240 - 30 * sky)
                    }
                    let dx = Double(x) - sunX
                    if dx * dx + dy * dy < sunRadiusSquared { (r, g, b) = (255, 220, 120) }
                    let offset = (y * width + x) * 4
                    buffer[offset] = UInt8(max(0, min(255, r + grain)))
                    buffer[offset + 1] = UInt8(max(0, min(255, g + grain)))
                    buffer[offset + 2] = UInt8(max(0, min(255, b + grain)))
                    if alpha { buffer[offset + 3] = UInt8(min(255, min(x, y, width - 1 - x, height - 1 - y) * 8)) }
                }
            }
        }
        return Bitmap(width: width, height: height, hasAlpha: alpha, pixels: pixels)
    }

    /// A bouncing ball, `frames` frames.
    static func animation(width: Int, height: Int, frames: Int) -> DecodedImage {
        let background = scene(width: width, height: height, seed: 99, grain: false)
        var list: [DecodedImage.Frame] = []
        for frame in 0..<frames {
            var bitmap = background
            let phase = Double(frame) / Double(frames)
            let cx = Int(Double(width) * (0.15 + 0.7 * phase))
            let cy = Int(Double(height) * (0.75 - 0.5 * abs(sin(phase * .pi * 2))))
            let radius = min(width, height) / 8
            for y in max(0, cy - radius)..<min(height, cy + radius) {
                for x in max(0, cx - radius)..<min(width, cx + radius)
                where (x - cx) * (x - cx) + (y - cy) * (y - cy) < radius * radius {
                    bitmap[x, y] = RGBA(r: 220, g: 40, b: 60, a: 255)
                }
            }
            list.append(DecodedImage.Frame(bitmap: bitmap, duration: 0.08))
        }
        return DecodedImage(frames: list, loopCount: 0, format: .gif)
    }

    /// One image of the set before it is encoded.
    private struct Spec {
        var name: String
        var kind: String
        var image: DecodedImage
        var format: ImageFormat
        var options = ImageEncodingOptions()
        /// Served in 16 KiB chunks (progressive previews show).
        var drip = false
    }

    /// The demo's set: a few megapixels of JPEG (baseline and progressive), PNG with alpha, an
    /// animated GIF, WebP, and a handful of small thumbnails.
    static func make() throws -> [DemoImage] {
        try specs().map { spec in
            DemoImage(
                name: spec.name,
                kind: spec.kind,
                data: try ImageCodersManager.shared.encode(spec.image, as: spec.format, options: spec.options),
                contentType: spec.format.mimeType,
                drip: spec.drip
            )
        }
    }

    private static func specs() -> [Spec] {
        func still(
            _ width: Int,
            _ height: Int,
            seed: UInt32,
            alpha: Bool = false,
            _ format: ImageFormat
        ) -> DecodedImage {
            DecodedImage(bitmap: scene(width: width, height: height, seed: seed, alpha: alpha), format: format)
        }
        let large: [Spec] = [
            Spec(
                name: "landscape-baseline.jpg",
                kind: "JPEG baseline 2048×1536",
                image: still(2048, 1536, seed: 1, .jpeg),
                format: .jpeg,
                options: .init(quality: 0.85)
            ),
            Spec(
                name: "landscape-progressive.jpg",
                kind: "JPEG progressive 1600×1200",
                image: still(1600, 1200, seed: 2, .jpeg),
                format: .jpeg,
                options: .init(quality: 0.85, progressive: true),
                drip: true
            ),
            Spec(
                name: "badge-alpha.png",
                kind: "PNG with alpha 512×512",
                image: still(512, 512, seed: 3, alpha: true, .png),
                format: .png
            ),
            Spec(
                name: "bounce.gif",
                kind: "GIF animated 240×180, 12 frames",
                image: animation(width: 240, height: 180, frames: 12),
                format: .gif
            ),
            Spec(
                name: "coast.webp",
                kind: "WebP lossy 1024×768",
                image: still(1024, 768, seed: 5, .webp),
                format: .webp,
                options: .init(quality: 0.8)
            ),
        ]
        let thumbnails = (0..<7).map { index in
            Spec(
                name: "thumb-\(index).jpg",
                kind: "JPEG 320×240",
                image: still(320, 240, seed: UInt32(10 + index), .jpeg),
                format: .jpeg,
                options: .init(quality: 0.8)
            )
        }
        return large + thumbnails
    }
}
