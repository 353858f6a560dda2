import Foundation
import WebImageCoders

/// Small summaries of an image for `/info`: its dominant colour and its BlurHash.
enum ImageSummary {
    /// The mean colour of the opaque pixels, `#rrggbb` (sampled on a grid of at most 64×64).
    static func dominantColor(of bitmap: Bitmap) -> String {
        var sums = (r: 0.0, g: 0.0, b: 0.0, weight: 0.0)
        let stepX = max(1, bitmap.width / 64)
        let stepY = max(1, bitmap.height / 64)
        for y in stride(from: 0, to: bitmap.height, by: stepY) {
            for x in stride(from: 0, to: bitmap.width, by: stepX) {
                let offset = y * bitmap.bytesPerRow + x * 4
                let alpha = Double(bitmap.pixels[offset + 3]) / 255
                sums.r += Double(bitmap.pixels[offset]) * alpha
                sums.g += Double(bitmap.pixels[offset + 1]) * alpha
                sums.b += Double(bitmap.pixels[offset + 2]) * alpha
                sums.weight += alpha
            }
        }
        guard sums.weight > 0 else { return "#000000" }
        let channels = [sums.r, sums.g, sums.b].map { Int(($0 / sums.weight).rounded()) }
        return "#" + channels.map { String(format: "%02x", min(255, max(0, $0))) }.joined()
    }

    /// The BlurHash (blurha.sh) of the image with 4×3 components, computed on a sample of at
    /// most 64×64 pixels.
    static func blurhash(of bitmap: Bitmap, componentsX: Int = 4, componentsY: Int = 3) -> String {
        let width = min(bitmap.width, 64)
        let height = min(bitmap.height, 64)
        func linear(_ value: UInt8) -> Double {
            let v = Double(value) / 255
            return v <= 0.04045 ? v / 12.92 : pow((v + 0.055) / 1.055, 2.4)
        }
        func sRGB(_ value: Double) -> Int {
            let v = max(0, min(1, value))
            return Int((v <= 0.0031308 ? v * 12.92 * 255 + 0.5 : (1.055 * pow(v, 1 / 2.4) - 0.055) * 255 + 0.5))
        }
        var samples = [(Double, Double, Double)](repeating: (0, 0, 0), count: width * height)
        for y in 0..<height {
            for x in 0..<width {
                let offset = (y * bitmap.height / height) * bitmap.bytesPerRow + (x * bitmap.width / width) * 4
                samples[y * width + x] = (
                    linear(bitmap.pixels[offset]), linear(bitmap.pixels[offset + 1]), linear(bitmap.pixels[offset + 2])
                )
            }
        }
        var factors: [(Double, Double, Double)] = []
        for j in 0..<componentsY {
            for i in 0..<componentsX {
                let normalisation = (i == 0 && j == 0) ? 1.0 : 2.0
                var sum = (0.0, 0.0, 0.0)
                for y in 0..<height {
                    for x in 0..<width {
                        let basis =
                            normalisation * cos(Double.pi * Double(i) * Double(x) / Double(width))
                            * cos(Double.pi * Double(j) * Double(y) / Double(height))
                        let pixel = samples[y * width + x]
                        sum = (sum.0 + basis * pixel.0, sum.1 + basis * pixel.1, sum.2 + basis * pixel.2)
                    }
                }
                let scale = 1 / Double(width * height)
                factors.append((sum.0 * scale, sum.1 * scale, sum.2 * scale))
            }
        }
        var hash = base83((componentsX - 1) + (componentsY - 1) * 9, length: 1)
        let ac = factors.dropFirst()
        let maximum = ac.map { max(abs($0.0), abs($0.1), abs($0.2)) }.max() ?? 0
        let quantisedMaximum = ac.isEmpty ? 0 : max(0, min(82, Int(floor(maximum * 166 - 0.5))))
        let acScale = ac.isEmpty ? 1 : Double(quantisedMaximum + 1) / 166
        hash += base83(quantisedMaximum, length: 1)
        let dc = factors[0]
        hash += base83((sRGB(dc.0) << 16) + (sRGB(dc.1) << 8) + sRGB(dc.2), length: 4)
        for factor in ac {
            func quantise(_ value: Double) -> Int {
                let signed = value / acScale
                let magnitude = pow(abs(signed), 0.5) * (signed < 0 ? -1 : 1)
                return max(0, min(18, Int(floor(magnitude * 9 + 9.5))))
            }
            hash += base83(quantise(factor.0) * 19 * 19 + quantise(factor.1) * 19 + quantise(factor.2), length: 2)
        }
        return hash
    }

    private static let alphabet = Array(
        "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz#$%*+,-.:;=?@[]^_{|}~"
    )

    private static func base83(_ value: Int, length: Int) -> String {
        var result = ""
        for index in 1...length {
            var power = 1
            for _ in 0..<(length - index) { power *= 83 }
            result.append(alphabet[(value / power) % 83])
        }
        return result
    }
}
