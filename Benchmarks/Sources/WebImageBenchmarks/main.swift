import CDirectCodecs
import Foundation
import Synchronization
import WebImageCoders
import WebImageTestEncoders

// Decode benchmarks: each row times swift-web-image beside the same work done directly through
// the C library, in the same run, and reports medians. Peak memory compares the thumbnail path
// with a full decode. Images are generated here with our own encoders (HEIC and JPEG XL with
// WebImageTestEncoders: libheif + x265, libjxl).
//
//   swift run -c release --package-path Benchmarks webimage-benchmarks [--iterations N] [--only classic|modern|color]
//
// `classic`: JPEG, PNG, WebP, GIF. `modern`: 12 MP AVIF, HEIC and JPEG XL decodes, AVIF encoding
// at three speeds, and their thumbnail paths (fewer iterations: each decode takes ~1 s).
// `color`: a 12 MP Display P3 JPEG decoded with its profile ignored and converted to sRGB, beside
// libjpeg + Little CMS called from C on the same file.

let iterations =
    CommandLine.arguments.firstIndex(of: "--iterations").flatMap {
        CommandLine.arguments.indices.contains($0 + 1) ? Int(CommandLine.arguments[$0 + 1]) : nil
    } ?? 15

let only = CommandLine.arguments.firstIndex(of: "--only").flatMap {
    CommandLine.arguments.indices.contains($0 + 1) ? CommandLine.arguments[$0 + 1] : nil
}
let runsClassic = only == nil || only == "classic"
let runsModern = only == nil || only == "modern"
let runsColor = only == nil || only == "color"

/// Child mode: `--peak-child full|thumbnail FILE` decodes FILE once in this fresh process and
/// prints the peak resident memory the decode added, in bytes.
if let index = CommandLine.arguments.firstIndex(of: "--peak-child"), CommandLine.arguments.count > index + 2 {
    let data = try Data(contentsOf: URL(fileURLWithPath: CommandLine.arguments[index + 2]))
    let options =
        CommandLine.arguments[index + 1] == "thumbnail"
        ? ImageDecodingOptions(thumbnailPixelSize: PixelSize(width: 256, height: 256)) : ImageDecodingOptions()
    let peak = try peakMemory { _ = try ImageCodersManager.shared.decode(data, options: options) }
    print(peak ?? -1)
    exit(0)
}

/// Proxy-path mode: `--resize` times the image proxy's hot path step by step: Lanczos-3
/// reductions of an opaque photo to 512 px, shrink-on-load JPEG decodes at each DCT scale, and
/// encoding the 512×341 result; prints the medians in milliseconds.
if CommandLine.arguments.contains("--resize") {
    for (width, height) in [(750, 500), (1000, 667), (2000, 1333)] {
        let source = photo(width: width, height: height)
        let target = PixelSize(width: 512, height: 512 * height / width)
        var samples: [Double] = []
        for _ in 0..<iterations {
            let start = ContinuousClock.now
            _ = source.resized(to: target)
            let elapsed = ContinuousClock.now - start
            samples.append(Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1000)
        }
        samples.sort()
        let median = String(format: "%.2f", samples[samples.count / 2])
        print("resize \(width)×\(height) → \(target.width)×\(target.height): \(median) ms")
    }
    // Shrink-on-load decodes of a 2000×1333 photo at each DCT scale the proxy may pick.
    let jpeg = try JPEGCoder().encode(
        .init(bitmap: photo(width: 2000, height: 1333), format: .jpeg),
        as: .jpeg,
        options: .init(quality: 0.85)
    )
    for minimum in [250, 500, 750, 1000, 2000] {
        var options = ImageDecodingOptions()
        options.shrinkOnLoadMinimumSize = PixelSize(width: minimum, height: 1)
        var samples: [Double] = []
        var size = PixelSize(width: 0, height: 0)
        for _ in 0..<iterations {
            let start = ContinuousClock.now
            let image = try JPEGCoder().decode(jpeg, options: options)
            let elapsed = ContinuousClock.now - start
            size = PixelSize(width: image.width, height: image.height)
            samples.append(Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1000)
        }
        samples.sort()
        let median = String(format: "%.2f", samples[samples.count / 2])
        print("decode 2000×1333 JPEG (\(jpeg.count / 1024) KB) at \(size.width)×\(size.height): \(median) ms")
    }
    // Encoding the proxy's 512×341 result.
    let result = DecodedImage(bitmap: photo(width: 512, height: 341), format: .jpeg)
    for format in [ImageFormat.jpeg, .webp, .png, .avif] {
        var samples: [Double] = []
        var bytes = 0
        for _ in 0..<iterations {
            let start = ContinuousClock.now
            bytes = try ImageCodersManager.shared.encode(result, as: format, options: .init(quality: 0.8)).count
            let elapsed = ContinuousClock.now - start
            samples.append(Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1000)
        }
        samples.sort()
        let median = String(format: "%.2f", samples[samples.count / 2])
        print("encode 512×341 as \(format.rawValue) q80 (\(bytes / 1024) KB): \(median) ms")
    }
    exit(0)
}

/// Photo mode: `--write-photos DIR [COUNT [WxH]]` writes COUNT (default 12) distinct JPEGs of WxH
/// (default 4000×3000; quality 85, 4:2:0) into DIR, for the whole-process thumbnail benchmark
/// (Benchmarks/thumbnails.sh) and the image proxy benchmark (Benchmarks/serve.sh).
if let index = CommandLine.arguments.firstIndex(of: "--write-photos"), CommandLine.arguments.count > index + 1 {
    let folder = URL(fileURLWithPath: CommandLine.arguments[index + 1], isDirectory: true)
    let count = CommandLine.arguments.count > index + 2 ? Int(CommandLine.arguments[index + 2]) ?? 12 : 12
    let size =
        CommandLine.arguments.count > index + 3
        ? CommandLine.arguments[index + 3].split(separator: "x").compactMap { Int($0) } : [4000, 3000]
    guard size.count == 2, size.allSatisfy({ $0 > 0 }) else {
        FileHandle.standardError.write(Data("--write-photos: the size must be WxH, e.g. 2000x1333\n".utf8))
        exit(2)
    }
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    for number in 1...count {
        let bitmap = photo(width: size[0], height: size[1], phase: Double(number) * 211)
        let data = try JPEGCoder().encode(
            .init(bitmap: bitmap, format: .jpeg),
            as: .jpeg,
            options: .init(quality: 0.85)
        )
        try data.write(to: folder.appendingPathComponent("photo\(number).jpg"))
    }
    exit(0)
}

/// Reference mode: `--eighth-decode FILE...` decodes each JPEG at DCT scale 1/8 straight through
/// libjpeg-turbo, one after another, and prints the total wall time in milliseconds (the floor
/// for a 256 px thumbnail of a 4000×3000 JPEG).
if let index = CommandLine.arguments.firstIndex(of: "--eighth-decode") {
    let clock = ContinuousClock()
    let elapsed = try clock.measure {
        for path in CommandLine.arguments[(index + 1)...] {
            let data = try Data(contentsOf: URL(fileURLWithPath: path))
            var width: UInt32 = 0
            var height: UInt32 = 0
            direct(data) { direct_jpeg_decode($0, $1, 8, &width, &height) }
        }
    }
    print(format(Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15))
    exit(0)
}

/// Reference mode: `--decode-floor THREADS FILE...` reads and decodes every JPEG whole (to RGBA)
/// straight through libjpeg-turbo on THREADS threads, and prints the wall time in milliseconds:
/// the floor for `webimage fetch` decoding the same files (Benchmarks/fetch-cost.sh).
if let index = CommandLine.arguments.firstIndex(of: "--decode-floor"), CommandLine.arguments.count > index + 1,
    let threads = Int(CommandLine.arguments[index + 1]), threads > 0
{
    let paths = Array(CommandLine.arguments[(index + 2)...])
    let failures = Atomic<Int>(0)
    let clock = ContinuousClock()
    let elapsed = clock.measure {
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for path in stride(from: thread, to: paths.count, by: threads).map({ paths[$0] }) {
                var width: UInt32 = 0
                var height: UInt32 = 0
                let decoded = FileManager.default.contents(atPath: path)?.withUnsafeBytes { bytes in
                    direct_jpeg_decode(bytes.bindMemory(to: UInt8.self).baseAddress!, bytes.count, 1, &width, &height)
                }
                guard decoded == 0 else {
                    failures.add(1, ordering: .relaxed)
                    continue
                }
            }
        }
    }
    guard failures.load(ordering: .relaxed) == 0 else {
        FileHandle.standardError.write(
            Data("--decode-floor: \(failures.load(ordering: .relaxed)) files did not decode\n".utf8)
        )
        exit(1)
    }
    print(format(Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15))
    exit(0)
}

func log(_ text: String) { FileHandle.standardError.write(Data((text + "\n").utf8)) }

/// A photo-like picture: smooth shapes with fine texture, so codecs work as on real photos.
func photo(width: Int, height: Int, alpha: Bool = false, phase: Double = 0) -> Bitmap {
    var pixels = [UInt8](repeating: 255, count: width * height * 4)
    var seed: UInt32 = 0x1234_5678
    for y in 0..<height {
        let fy = Double(y)
        for x in 0..<width {
            let fx = Double(x) + phase
            seed = seed &* 1_664_525 &+ 1_013_904_223
            let grain = Double(seed >> 28) - 8
            let offset = (y * width + x) * 4
            pixels[offset] = UInt8(max(0, min(255, 128 + 90 * sin(fx / 97 + fy / 131) + grain)))
            pixels[offset + 1] = UInt8(max(0, min(255, 128 + 80 * sin(fx / 53 - fy / 71) + grain)))
            pixels[offset + 2] = UInt8(max(0, min(255, 128 + 70 * cos((fx + fy) / 113) + grain)))
            if alpha { pixels[offset + 3] = UInt8(x * 255 / max(1, width - 1)) }
        }
    }
    return Bitmap(width: width, height: height, hasAlpha: alpha, pixels: pixels)
}

/// Frames with few colours (moving bands), as animated GIFs usually are.
func bands(width: Int, height: Int, frame: Int) -> Bitmap {
    var pixels = [UInt8](repeating: 255, count: width * height * 4)
    for y in 0..<height {
        for x in 0..<width {
            let band = ((x + frame * 6) / 12 + y / 20) % 32
            let offset = (y * width + x) * 4
            pixels[offset] = UInt8(band * 8)
            pixels[offset + 1] = UInt8(255 - band * 8)
            pixels[offset + 2] = UInt8((band * 37) % 256)
        }
    }
    return Bitmap(width: width, height: height, hasAlpha: false, pixels: pixels)
}

func median(_ samples: [Double]) -> Double {
    let sorted = samples.sorted()
    return sorted.count % 2 == 1
        ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

/// `duration` in milliseconds.
func milliseconds(_ duration: Duration) -> Double {
    Double(duration.components.attoseconds) / 1e15 + Double(duration.components.seconds) * 1000
}

/// Median wall time in milliseconds over `runs` runs (default `--iterations`), after one warm-up.
func time(runs: Int = iterations, _ body: () throws -> Void) rethrows -> Double {
    try body()
    let clock = ContinuousClock()
    var samples: [Double] = []
    for _ in 0..<runs {
        samples.append(milliseconds(try clock.measure(body)))
    }
    return median(samples)
}

/// Median wall times in milliseconds of `first` and `second`, run in turn (`runs` pairs after one
/// warm-up each), and the median of each pair's difference: a slow spell of the machine falls on
/// both, so the difference is not one block's drift against another's.
func timeAlternating(
    runs: Int = iterations,
    _ first: () throws -> Void,
    _ second: () throws -> Void
) rethrows -> (first: Double, second: Double, difference: Double) {
    try first()
    try second()
    let clock = ContinuousClock()
    var firsts: [Double] = []
    var seconds: [Double] = []
    for _ in 0..<runs {
        firsts.append(milliseconds(try clock.measure(first)))
        seconds.append(milliseconds(try clock.measure(second)))
    }
    return (median(firsts), median(seconds), median(zip(seconds, firsts).map { $0 - $1 }))
}

/// Peak resident memory added while `body` runs, in bytes (Linux: resets VmHWM through
/// /proc/self/clear_refs, then reads it back).
func peakMemory(_ body: () throws -> Void) rethrows -> Int? {
    func status(_ field: String) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
            return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "").map {
                $0 * 1024
            }
        }
        return nil
    }
    guard (try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)) != nil,
        let before = status("VmRSS")
    else { return nil }
    try body()
    return status("VmHWM").map { $0 - before }
}

struct Row {
    var name: String
    var ours: Double
    var direct: Double?
    var note: String = ""
}

func direct(_ data: Data, _ call: (UnsafePointer<UInt8>, Int) -> Int32) {
    let status = data.withUnsafeBytes { call($0.baseAddress!.assumingMemoryBound(to: UInt8.self), $0.count) }
    precondition(status == 0, "the direct C decode failed")
}

let thumbnailBox = ImageDecodingOptions(thumbnailPixelSize: PixelSize(width: 256, height: 256))

/// JPEG, PNG, WebP and GIF rows; the JPEG's data for the peak-memory rows.
func classicRows(into rows: inout [Row]) throws -> Data {
    var (width, height, frameCount): (UInt32, UInt32, UInt32) = (0, 0, 0)
    log("generating test images…")
    let big = photo(width: 4000, height: 3000)
    let medium = photo(width: 1024, height: 768)
    let jpegBaseline = try JPEGCoder().encode(
        DecodedImage(bitmap: big, format: .jpeg),
        as: .jpeg,
        options: .init(quality: 0.9)
    )
    let jpegProgressive = try JPEGCoder().encode(
        DecodedImage(bitmap: big, format: .jpeg),
        as: .jpeg,
        options: .init(quality: 0.9, progressive: true)
    )
    let jpegMedium = try JPEGCoder().encode(
        DecodedImage(bitmap: medium, format: .jpeg),
        as: .jpeg,
        options: .init(quality: 0.9)
    )
    let pngMedium = try PNGCoder().encode(
        DecodedImage(bitmap: photo(width: 1024, height: 768, alpha: true), format: .png),
        as: .png,
        options: .init()
    )
    /// 1 × 1,000,000 (the most rows the C reference, libpng's simplified API, reads): an extreme
    /// aspect ratio, whose resize once ran Lanczos over hundreds of thousands of taps per pixel.
    let pngTall = try PNGCoder().encode(
        DecodedImage(bitmap: photo(width: 1, height: 1_000_000), format: .png),
        as: .png,
        options: .init()
    )
    let webpMedium = try WebPCoder().encode(
        DecodedImage(bitmap: medium, format: .webp),
        as: .webp,
        options: .init(quality: 0.8)
    )
    let gifAnimation = try GIFCoder().encode(
        DecodedImage(
            frames: (0..<50).map { .init(bitmap: bands(width: 400, height: 300, frame: $0), duration: 0.05) },
            loopCount: 0,
            format: .gif
        ),
        as: .gif,
        options: .init()
    )
    log("running \(iterations) iterations per row…")

    rows.append(
        Row(
            name: "JPEG 4000×3000 baseline",
            ours: try time { _ = try JPEGCoder().decode(jpegBaseline, options: .init()) },
            direct: time { direct(jpegBaseline) { direct_jpeg_decode($0, $1, 1, &width, &height) } }
        )
    )
    rows.append(
        Row(
            name: "JPEG 4000×3000 progressive",
            ours: try time { _ = try JPEGCoder().decode(jpegProgressive, options: .init()) },
            direct: time { direct(jpegProgressive) { direct_jpeg_decode($0, $1, 1, &width, &height) } }
        )
    )
    rows.append(
        Row(
            name: "JPEG 1024×768",
            ours: try time { _ = try JPEGCoder().decode(jpegMedium, options: .init()) },
            direct: time { direct(jpegMedium) { direct_jpeg_decode($0, $1, 1, &width, &height) } }
        )
    )
    rows.append(
        Row(
            name: "PNG 1024×768 RGBA",
            ours: try time { _ = try PNGCoder().decode(pngMedium, options: .init()) },
            direct: time { direct(pngMedium) { direct_png_decode($0, $1, &width, &height) } },
            note: "C: libpng simplified API"
        )
    )
    rows.append(
        Row(
            name: "WebP 1024×768 lossy",
            ours: try time { _ = try WebPCoder().decode(webpMedium, options: .init()) },
            direct: time { direct(webpMedium) { direct_webp_decode($0, $1, &width, &height) } }
        )
    )
    rows.append(
        Row(
            name: "GIF 400×300, 50 frames",
            ours: try time { _ = try GIFCoder().decode(gifAnimation, options: .init()) },
            direct: time { direct(gifAnimation) { direct_gif_decode($0, $1, &width, &height, &frameCount) } },
            note: "C: DGifSlurp + compose"
        )
    )
    rows.append(
        Row(
            name: "JPEG 4000×3000 → 256 px thumbnail",
            ours: try time { _ = try JPEGCoder().decode(jpegBaseline, options: thumbnailBox) },
            direct: time { direct(jpegBaseline) { direct_jpeg_decode($0, $1, 8, &width, &height) } },
            note: "C: DCT 1/8 only (500×375, no resize)"
        )
    )
    rows.append(
        Row(
            name: "PNG 1×1,000,000 → 1×64 thumbnail",
            ours: try time {
                _ = try PNGCoder().decode(pngTall, options: .init(thumbnailPixelSize: PixelSize(width: 64, height: 64)))
            },
            direct: time { direct(pngTall) { direct_png_decode($0, $1, &width, &height) } },
            note: "C: full decode only (no resize)"
        )
    )
    log("median of \(iterations) runs; JPEG \(jpegBaseline.count) B baseline, \(jpegProgressive.count) B progressive")
    return jpegBaseline
}

/// A 12 MP photo as AVIF, HEIC (with a 320 px embedded thumbnail, as phones write) and lossy
/// JPEG XL: decode rows beside the C libraries, AVIF encode rows, thumbnail rows. Returns the
/// files for the peak-memory rows.
func modernRows(into rows: inout [Row]) throws -> [(name: String, data: Data)] {
    let runs = max(3, iterations / 3)
    var (width, height): (UInt32, UInt32) = (0, 0)
    log("encoding the 12 MP AVIF, HEIC and JPEG XL images (a minute or two)…")
    let photo12MP = photo(width: 4000, height: 3000)
    let still = DecodedImage(bitmap: photo12MP, format: .avif)
    let avif = try AVIFCoder(speed: 8).encode(still, as: .avif, options: .init(quality: 0.7))
    let heic = try HEIFTestEncoder.encode(photo12MP, lossless: false, thumbnail: photo12MP, thumbnailBox: 320)
    let jxl = try JXLTestEncoder.encode([photo12MP], distance: 1.5)
    let files: [(name: String, data: Data, direct: (UnsafePointer<UInt8>, Int) -> Int32)] = [
        ("AVIF", avif, { direct_avif_decode($0, $1, &width, &height) }),
        ("HEIC", heic, { direct_heif_decode($0, $1, &width, &height) }),
        ("JPEG XL", jxl, { direct_jxl_decode($0, $1, &width, &height) }),
    ]
    for file in files {
        rows.append(
            Row(
                name: "\(file.name) 4000×3000 (\(file.data.count / 1024) KB)",
                ours: try time(runs: runs) { _ = try ImageCodersManager.shared.decode(file.data) },
                direct: time(runs: runs) { direct(file.data, file.direct) },
                note: file.name == "HEIC" ? "ours copies libheif's RGBA into a Bitmap" : "one thread"
            )
        )
    }
    for file in files {
        rows.append(
            Row(
                name: "\(file.name) 4000×3000 → 256 px thumbnail",
                ours: try time(runs: runs) {
                    _ = try ImageCodersManager.shared.decode(file.data, options: thumbnailBox)
                },
                direct: nil,
                note: file.name == "HEIC" ? "embedded 320×240 thumbnail" : "full decode, then resize"
            )
        )
    }
    let medium = DecodedImage(bitmap: photo(width: 1024, height: 768), format: .avif)
    for speed in [6, 8, 10] {
        var size = 0
        let milliseconds = try time(runs: runs) {
            size = try AVIFCoder(speed: speed).encode(medium, as: .avif, options: .init(quality: 0.7)).count
        }
        rows.append(
            Row(
                name: "AVIF encode 1024×768, speed \(speed)",
                ours: milliseconds,
                direct: nil,
                note: "\(size / 1024) KB"
            )
        )
    }
    log("modern rows: median of \(runs) runs")
    return files.map { ($0.name, $0.data) }
}

/// Runs this executable in child mode so each peak is measured in a process with a clean heap.
func childPeak(_ mode: String, _ data: Data) throws -> Int? {
    let file = FileManager.default.temporaryDirectory.appendingPathComponent("webimage-bench-\(UUID().uuidString)")
    try data.write(to: file)
    defer { try? FileManager.default.removeItem(at: file) }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    process.arguments = ["--peak-child", mode, file.path]
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    return Int(text.trimmingCharacters(in: .whitespacesAndNewlines)).flatMap { $0 >= 0 ? $0 : nil }
}

/// The colour rows: what converting a 12 MP Display P3 JPEG to sRGB adds to its decode, ours and
/// C's (libjpeg, then cmsDoTransform with the same flags on the same pixels).
func colorRows(into rows: inout [Row]) throws -> String {
    var (width, height): (UInt32, UInt32) = (0, 0)
    log("encoding the 12 MP Display P3 JPEG…")
    var tagged = DecodedImage(bitmap: photo(width: 4000, height: 3000), format: .jpeg)
    let untagged = try JPEGCoder().encode(tagged, as: .jpeg, options: .init(quality: 0.9))
    tagged.colorProfile = .displayP3
    let p3 = try JPEGCoder().encode(tagged, as: .jpeg, options: .init(quality: 0.9))
    let icc = [UInt8](ColorProfile.displayP3.data)
    precondition(direct_color_transform_prepare(icc, icc.count) == 0, "lcms cannot build the P3 transform")
    let ignore = ImageDecodingOptions(colorPolicy: .ignore)
    let coder = JPEGCoder()
    let ours = try timeAlternating(
        { _ = try coder.decode(p3, options: ignore) },
        { _ = try coder.decode(p3, options: ImageDecodingOptions()) }
    )
    let ignored = Row(
        name: "JPEG 4000×3000 Display P3, profile ignored",
        ours: ours.first,
        direct: time { direct(p3) { direct_jpeg_decode($0, $1, 1, &width, &height) } },
        note: "C: libjpeg only"
    )
    let converted = Row(
        name: "JPEG 4000×3000 Display P3 → sRGB",
        ours: ours.second,
        direct: time { direct(p3) { direct_jpeg_decode_to_srgb($0, $1, &width, &height) } },
        note: "C: libjpeg, then cmsDoTransform"
    )
    let plain = Row(
        name: "JPEG 4000×3000 untagged (default policy)",
        ours: try time { _ = try coder.decode(untagged, options: ImageDecodingOptions()) },
        direct: time { direct(untagged) { direct_jpeg_decode($0, $1, 1, &width, &height) } },
        note: "no transform"
    )
    var thumbnailIgnoring = thumbnailBox
    thumbnailIgnoring.colorPolicy = .ignore
    let thumbnailIgnored = Row(
        name: "JPEG 4000×3000 Display P3 → 256 px thumbnail, profile ignored",
        ours: try time { _ = try coder.decode(p3, options: thumbnailIgnoring) },
        direct: nil,
        note: "DCT 1/8, then resize"
    )
    let thumbnailConverted = Row(
        name: "JPEG 4000×3000 Display P3 → 256 px thumbnail, converted",
        ours: try time { _ = try coder.decode(p3, options: thumbnailBox) },
        direct: nil,
        note: ""
    )
    rows += [ignored, converted, plain, thumbnailIgnored, thumbnailConverted]
    rows[rows.count - 1].note = String(
        format: "converted at the DCT-scaled 500×375: +%.1f %%",
        100 * (thumbnailConverted.ours / thumbnailIgnored.ours - 1)
    )
    // Ours: the median of each alternating pair's difference (the two decodes ran in turn).
    let ourTransform = ours.difference
    let theirTransform = (converted.direct ?? 0) - (ignored.direct ?? 0)
    return String(
        format: "conversion adds %.1f %% to our decode (C: %.1f %%); our transform %.2f ms, C's %.2f ms (%.3f×)",
        100 * ourTransform / ignored.ours,
        100 * theirTransform / (ignored.direct ?? 1),
        ourTransform,
        theirTransform,
        ourTransform / theirTransform
    )
}

var colorSummary: String?
var rows: [Row] = []
var peakFiles: [(name: String, data: Data)] = []
if runsClassic { peakFiles.append(("JPEG 4000×3000", try classicRows(into: &rows))) }
if runsModern { peakFiles += try modernRows(into: &rows).map { ("\($0.name) 4000×3000", $0.data) } }
if runsColor { colorSummary = try colorRows(into: &rows) }

func format(_ value: Double) -> String { String(format: "%.2f", value) }
print("| benchmark | swift-web-image ms | direct C ms | ours / C | note |")
print("|---|---:|---:|---:|---|")
for row in rows {
    let ratio = row.direct.map { String(format: "%.3f", row.ours / $0) } ?? "–"
    print("| \(row.name) | \(format(row.ours)) | \(row.direct.map(format) ?? "–") | \(ratio) | \(row.note) |")
}
if let colorSummary { print("\n\(colorSummary)") }
print("")
print("| peak memory added by one decode | full MB | 256 px thumbnail MB | thumbnail / full |")
print("|---|---:|---:|---:|")
for file in peakFiles {
    if let full = try childPeak("full", file.data), let thumbnail = try childPeak("thumbnail", file.data) {
        let ratio = String(format: "%.3f", Double(thumbnail) / Double(full))
        print(
            "| \(file.name) | \(format(Double(full) / 1_048_576)) | \(format(Double(thumbnail) / 1_048_576)) | \(ratio) |"
        )
    } else {
        print("| \(file.name) (peak memory needs Linux /proc/self/clear_refs) | – | – | – |")
    }
}
