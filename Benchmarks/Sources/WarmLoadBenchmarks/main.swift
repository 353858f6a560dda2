import BenchmarkSupport
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

let imageCount = argument("--images", default: 1000)
let rounds = argument("--rounds", default: 7)

let jpeg = try photoJPEG(width: 320, height: 240)
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
_ = try await timeLoads(count: imageCount, width: 6) { index in
    _ = try await manager.loadImage(with: origin.url("/img/\(index).jpg"))
}
await manager.flush()
let requestsBefore = origin.totalRequestCount

var decoded: [Double] = []
var bytesOnly: [Double] = []
for _ in 0..<rounds {
    cache.clearMemory()
    decoded.append(
        try await timeLoads(count: imageCount, width: 6) { index in
            let result = try await manager.loadImage(with: origin.url("/img/\(index).jpg"))
            precondition(result.cacheType == .disk)
        }
    )
    cache.clearMemory()
    bytesOnly.append(
        try await timeLoads(count: imageCount, width: 6) { index in
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
