import Foundation
import WebImage
@_spi(Testing) import WebImageCoders
import WebImageServer

/// The proxy's own untrusted input: the request path (signature, options, plain and base64
/// sources, the extension) and what it asks the pipeline to do.
enum ProxyFuzzTargets {
    /// Presets as a server might configure them, so `pr:` and bare preset names reach expansion
    /// (a preset naming itself must be refused, not loop).
    static let presets: [String: [ProxyOption]] = [
        "default": [ProxyOption(name: "q", arguments: ["82"])],
        "thumb": [
            ProxyOption(name: "rs", arguments: ["fill", "64", "64"]), ProxyOption(name: "g", arguments: ["sm"]),
        ],
        "loop": [ProxyOption(name: "pr", arguments: ["loop"])],
    ]

    static let signer = try! URLSigner(pairs: [URLSigner.KeyPair(key: Data("fuzz-key".utf8), salt: Data("salt".utf8))])

    /// The input as a request path: parsed, its signature checked, its options applied over the
    /// defaults (with and without only-presets), its extension named. A signature made for the
    /// signed part must verify.
    static func path(_ data: Data) {
        let text = String(decoding: data, as: UTF8.self)
        let path = text.hasPrefix("/") ? text : "/" + text
        guard let request = try? ProxyPath(parsing: path) else { return }
        if !signer.verify(signature: signer.signature(for: request.signedPath), path: request.signedPath) {
            fatalError("a path's own signature does not verify: \(request.signedPath)")
        }
        _ = signer.verify(signature: request.signature, path: request.signedPath)
        _ = request.outputExtension.map(ProcessingOptions.format(named:))
        _ = URL(string: request.source)
        _ = try? ProcessingOptions(request.options, presets: presets)
        _ = try? ProcessingOptions(request.options, presets: presets, onlyPresets: true)
    }

    /// A small generated image rendered as the input asks, stopped where it says: byte 0 picks
    /// the output format, byte 1 the check (of the processor's and the encoder's, counted
    /// together) at which the work stops (0: never), the rest are the options (`/`-separated, as
    /// in a URL). Results over a megapixel are skipped, as the proxy's result limit refuses them.
    static func render(_ data: Data) {
        guard data.count > 2 else { return }
        let formats = ProcessingOptions.outputFormats.sorted { $0.rawValue < $1.rawValue }
        let format = formats[Int(data[data.startIndex]) % formats.count]
        let stopAt = Int(data[data.startIndex + 1])
        let text = String(decoding: data.dropFirst(2), as: UTF8.self)
        let parsed = text.split(separator: "/").compactMap(ProxyOption.init(segment:))
        guard var options = try? ProcessingOptions(parsed, presets: presets) else { return }
        options.watermark = nil  // no watermark image here
        let image = source(animated: text.contains("anim"))
        let geometry = ResizeGeometry(source: image.sourceSize, options: options)
        guard geometry.padded.width * geometry.padded.height <= 1_000_000,
            geometry.scaled.width * geometry.scaled.height <= 4_000_000
        else { return }
        let cancellation = CodingCancellation()
        if stopAt > 0 { cancellation.cancel(afterChecks: stopAt) }
        guard let processed = ImageProcessor.process(image, options: options, cancellation: cancellation) else {
            guard cancellation.isCancelled else { fatalError("processing gave nothing without a stop") }
            return
        }
        var encoding = ImageEncodingOptions(quality: Double(options.quality ?? 80) / 100, maxEncodeDuration: nil)
        encoding.cancellation = cancellation
        do {
            _ = try ImageCodersManager.shared.encode(processed, as: format, options: encoding)
        } catch {
            // A stop is "limitExceeded"; ICO refuses over 256 pixels a side the same way.
            if error.code == "limitExceeded" && !cancellation.isCancelled && format != .ico {
                fatalError("\(format): limitExceeded without a stop: \(error)")
            }
        }
    }

    /// 96×64 photo-like pixels with translucent corners (so alpha paths run), or three frames.
    static func source(animated: Bool) -> DecodedImage {
        animated ? animation : still
    }

    static let still = DecodedImage(bitmap: bitmap(seed: 1), format: .png)

    static let animation: DecodedImage = {
        var image = DecodedImage(bitmap: bitmap(seed: 1), format: .gif)
        image.frames = (1...3).map { DecodedImage.Frame(bitmap: bitmap(seed: UInt32($0)), duration: 0.1) }
        return image
    }()

    static func bitmap(seed: UInt32) -> Bitmap {
        let width = 96
        let height = 64
        var state = seed &* 2_654_435_761 | 1
        var pixels = [UInt8](repeating: 255, count: width * height * 4)
        for y in 0..<height {
            for x in 0..<width {
                state ^= state << 13
                state ^= state >> 17
                state ^= state << 5
                let index = (y * width + x) * 4
                pixels[index] = UInt8(truncatingIfNeeded: x * 2 + Int(state & 31))
                pixels[index + 1] = UInt8(truncatingIfNeeded: y * 3 + Int((state >> 8) & 31))
                pixels[index + 2] = UInt8(truncatingIfNeeded: state >> 16)
                let corner = (x < 12 || x >= width - 12) && (y < 12 || y >= height - 12)
                pixels[index + 3] = corner ? UInt8(truncatingIfNeeded: state >> 24) : 255
            }
        }
        return Bitmap(width: width, height: height, hasAlpha: true, pixels: pixels)
    }
}
