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

    /// The demo's set: a few megapixels of JPEG (baseline and progressive), PNG with alpha, an
    /// animated GIF, WebP, and a handful of small thumbnails.
    // shape: issue 33 splits this (named in its notes: the load task owning its stages, or a long function doing several jobs)
    static func make() throws -> [DemoImage] {
        let coders = ImageCodersManager.shared
        func encode(
            _ image: DecodedImage,
            _ format: ImageFormat,
            _ options: ImageEncodingOptions = .init()
        ) throws -> Data {
            try coders.encode(image, as: format, options: options)
        }
        var images: [DemoImage] = []
        images.append(
            DemoImage(
                name: "landscape-baseline.jpg",
                kind: "JPEG baseline 2048×1536",
                data: try encode(
                    DecodedImage(bitmap: scene(width: 2048, height: 1536, seed: 1), format: .jpeg),
                    .jpeg,
                    .init(quality: 0.85)
                ),
                contentType: "image/jpeg",
                drip: false
            )
        )
        images.append(
            DemoImage(
                name: "landscape-progressive.jpg",
                kind: "JPEG progressive 1600×1200",
                data: try encode(
                    DecodedImage(bitmap: scene(width: 1600, height: 1200, seed: 2), format: .jpeg),
                    .jpeg,
                    .init(quality: 0.85, progressive: true)
                ),
                contentType: "image/jpeg",
                drip: true
            )
        )
        images.append(
            DemoImage(
                name: "badge-alpha.png",
                kind: "PNG with alpha 512×512",
                data: try encode(
                    DecodedImage(bitmap: scene(width: 512, height: 512, seed: 3, alpha: true), format: .png),
                    .png
                ),
                contentType: "image/png",
                drip: false
            )
        )
        images.append(
            DemoImage(
                name: "bounce.gif",
                kind: "GIF animated 240×180, 12 frames",
                data: try encode(animation(width: 240, height: 180, frames: 12), .gif),
                contentType: "image/gif",
                drip: false
            )
        )
        images.append(
            DemoImage(
                name: "coast.webp",
                kind: "WebP lossy 1024×768",
                data: try encode(
                    DecodedImage(bitmap: scene(width: 1024, height: 768, seed: 5), format: .webp),
                    .webp,
                    .init(quality: 0.8)
                ),
                contentType: "image/webp",
                drip: false
            )
        )
        for index in 0..<7 {
            images.append(
                DemoImage(
                    name: "thumb-\(index).jpg",
                    kind: "JPEG 320×240",
                    data: try encode(
                        DecodedImage(bitmap: scene(width: 320, height: 240, seed: UInt32(10 + index)), format: .jpeg),
                        .jpeg,
                        .init(quality: 0.8)
                    ),
                    contentType: "image/jpeg",
                    drip: false
                )
            )
        }
        return images
    }
}
