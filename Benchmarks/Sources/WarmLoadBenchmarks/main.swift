import Foundation
import WebImage
import WebImageOrigin

// Warm loads from disk: N fresh entries (served with Cache-Control: max-age=86400, ETag and
// Last-Modified) loaded through ImageManager with memory cleared, 6 at a time, decoded and as
// bytes only (avoidDecodeImage, where the cache's own work is most of the time). Issue 34's
// guard: judging freshness reads only the stored metadata, so it must cost under 5 %. Run it at
// two commits to compare; no request may reach the origin while measuring.
//
//   swift run -c release --package-path Benchmarks webimage-warm-load-benchmarks [--images N] [--rounds R]

func argument(_ name: String, default value: Int) -> Int {
    CommandLine.arguments.firstIndex(of: name).flatMap {
        CommandLine.arguments.indices.contains($0 + 1) ? Int(CommandLine.arguments[$0 + 1]) : nil
    } ?? value
}

let imageCount = argument("--images", default: 1000)
let rounds = argument("--rounds", default: 7)

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }

/// A 320×240 JPEG of smooth gradients with grain, about 20 KB.
func photoJPEG() throws -> Data {
    var pixels = [UInt8](repeating: 255, count: 320 * 240 * 4)
    var seed: UInt32 = 7
    for y in 0..<240 {
        for x in 0..<320 {
            seed = seed &* 1_664_525 &+ 1_013_904_223
            let grain = Double(seed >> 27) - 16
            let offset = (y * 320 + x) * 4
            pixels[offset] = UInt8(max(0, min(255, 128 + 90 * sin(Double(x) / 37 + Double(y) / 51) + grain)))
            pixels[offset + 1] = UInt8(max(0, min(255, 128 + 80 * sin(Double(x) / 23 - Double(y) / 41) + grain)))
            pixels[offset + 2] = UInt8(max(0, min(255, 128 + 70 * cos(Double(x + y) / 29) + grain)))
        }
    }
    let bitmap = Bitmap(width: 320, height: 240, hasAlpha: false, pixels: pixels)
    return try JPEGCoder().encode(DecodedImage(bitmap: bitmap, format: .jpeg), as: .jpeg, options: .init(quality: 0.85))
}

/// Seconds for loading every image, 6 at a time.
func timeLoads(_ load: @escaping @Sendable (Int) async throws -> Void) async throws -> Double {
    let start = ContinuousClock.now
    try await withThrowingTaskGroup(of: Void.self) { group in
        var next = 0
        while next < min(6, imageCount) {
            let index = next
            group.addTask { try await load(index) }
            next += 1
        }
        while try await group.next() != nil {
            if next < imageCount {
                let index = next
                group.addTask { try await load(index) }
                next += 1
            }
        }
    }
    return seconds(ContinuousClock.now - start)
}

let jpeg = try photoJPEG()
let origin = try await OriginServer.start()
for index in 0..<imageCount {
    origin.setRoute(
        "/img/\(index).jpg",
        OriginRoute(
            status: 200,
            headers: [
                ("Content-Type", "image/jpeg"), ("ETag", "\"\(index)\""), ("Cache-Control", "max-age=86400"),
                ("Last-Modified", "Sun, 06 Nov 1994 08:49:37 GMT"),
            ],
            body: jpeg
        )
    )
}
let root = FileManager.default.temporaryDirectory.appendingPathComponent("webimage-warm-\(getpid())")
defer { try? FileManager.default.removeItem(at: root) }
var configuration = ImageCache.Configuration()
configuration.cleanupInterval = nil
let cache = ImageCache(directory: root, configuration: configuration)
let manager = ImageManager(cache: cache, loader: ImageDownloader())
_ = try await timeLoads { index in _ = try await manager.loadImage(with: origin.url("/img/\(index).jpg")) }
await manager.flush()
let requestsBefore = origin.totalRequestCount

var decoded: [Double] = []
var bytesOnly: [Double] = []
for _ in 0..<rounds {
    cache.clearMemory()
    decoded.append(
        try await timeLoads { index in
            let result = try await manager.loadImage(with: origin.url("/img/\(index).jpg"))
            precondition(result.cacheType == .disk)
        }
    )
    cache.clearMemory()
    bytesOnly.append(
        try await timeLoads { index in
            let result = try await manager.loadImage(with: origin.url("/img/\(index).jpg"), options: .avoidDecodeImage)
            precondition(result.cacheType == .disk && result.data != nil)
        }
    )
}
precondition(origin.totalRequestCount == requestsBefore, "a warm load reached the origin")
await origin.stop()

print("| \(imageCount) warm disk loads (\(jpeg.count / 1024) KB JPEGs), 6 at a time | median of \(rounds) |")
print("|---|---:|")
print("| decoded | \(String(format: "%.1f", median(decoded) * 1000)) ms |")
print("| bytes only (avoidDecodeImage) | \(String(format: "%.1f", median(bytesOnly) * 1000)) ms |")
