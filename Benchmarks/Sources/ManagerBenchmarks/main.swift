import BenchmarkSupport
import Foundation
import WebImage
import WebImageOrigin

// ImageManager's overhead: a warm memory hit through the manager (async and completion forms)
// beside a direct memory-cache lookup, and a cold load of N ~100 KB JPEGs through the manager
// (cache miss, download, decode, memory + disk store) beside the downloader alone (download and
// decode), 6 at a time, same run. Medians of rounds.
//
//   swift run -c release --package-path Benchmarks webimage-manager-benchmarks [--images N] [--rounds R]

let imageCount = argument("--images", default: 1000)
let rounds = argument("--rounds", default: 5)
let clock = ContinuousClock()

let root = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("webimage-manager-bench-\(getpid())")
defer { try? FileManager.default.removeItem(at: root) }
var cacheConfiguration = ImageCache.Configuration()
cacheConfiguration.cleanupInterval = nil

// MARK: Memory hits

let warmCache = ImageCache(directory: root.appendingPathComponent("warm"), configuration: cacheConfiguration)
let warmManager = ImageManager(cache: warmCache, loader: ImageDownloader())
let hitURL = URL(string: "https://images.example.com/photos/42/large.jpg?w=640")!
let small = DecodedImage(
    bitmap: Bitmap(width: 64, height: 64, pixels: [UInt8](repeating: 9, count: 64 * 64 * 4)),
    format: .jpeg
)
warmCache.store(small, data: nil, forKey: hitURL.absoluteString, cacheType: .memory)

/// Per-hit seconds: direct lookup, async manager hit, completion-handler manager hit. A function
/// (not top-level code) so nothing here hops to the main actor.
func measureHits(cache: ImageCache, manager: ImageManager, url: URL, hits: Int) async throws -> (Double, Double, Double)
{
    let key = url.absoluteString
    var start = ContinuousClock.now
    for _ in 0..<hits { precondition(cache.memoryCache.image(forKey: key) != nil) }
    let direct = seconds(ContinuousClock.now - start) / Double(hits)
    start = ContinuousClock.now
    for _ in 0..<hits {
        let result = try await manager.loadImage(with: url)
        precondition(result.cacheType == .memory)
    }
    let viaAsync = seconds(ContinuousClock.now - start) / Double(hits)
    start = ContinuousClock.now
    for _ in 0..<hits {
        manager.loadImage(with: url) { image, _, _, _, _, _ in precondition(image != nil) }
    }
    let viaCompletion = seconds(ContinuousClock.now - start) / Double(hits)
    return (direct, viaAsync, viaCompletion)
}

var directHit: [Double] = []
var asyncHit: [Double] = []
var completionHit: [Double] = []
for _ in 0..<rounds {
    let (direct, viaAsync, viaCompletion) = try await measureHits(
        cache: warmCache,
        manager: warmManager,
        url: hitURL,
        hits: 200_000
    )
    directHit.append(direct)
    asyncHit.append(viaAsync)
    completionHit.append(viaCompletion)
}

// MARK: Thumbnail disk hits

/// A photo-like 4000×3000 (12 MP) JPEG.
func largePhotoJPEG() throws -> Data {
    let (width, height) = (4000, 3000)
    var pixels = [UInt8](repeating: 255, count: width * height * 4)
    for y in 0..<height {
        for x in 0..<width {
            let offset = (y * width + x) * 4
            pixels[offset] = UInt8(128 + 100 * sin(Double(x) / 97 + Double(y) / 131))
            pixels[offset + 1] = UInt8(128 + 90 * sin(Double(x) / 61 - Double(y) / 89))
            pixels[offset + 2] = UInt8(truncatingIfNeeded: (x ^ y) & 0x3F + 96)
        }
    }
    let bitmap = Bitmap(width: width, height: height, hasAlpha: false, pixels: pixels)
    return try JPEGCoder().encode(DecodedImage(bitmap: bitmap, format: .jpeg), as: .jpeg, options: .init(quality: 0.85))
}

/// Median seconds of `hits` disk hits of `url`'s thumbnail (memory cleared before each), and the
/// bytes its disk entry holds.
func thumbnailDiskHits(cache: ImageCache, url: URL, context: ImageContext, hits: Int) async throws -> (Double, Int) {
    let loader = ImageDownloader()
    var manager = ImageManager(cache: cache, loader: loader)
    var times: [Double] = []
    for _ in 0..<hits {
        // A new manager each time: a load that starts while the last one's task is still
        // delivering would join it and measure nothing.
        manager = ImageManager(cache: cache, loader: loader)
        cache.clearMemory()
        let start = ContinuousClock.now
        let result = try await manager.loadImage(with: url, context: context)
        times.append(seconds(ContinuousClock.now - start))
        precondition(result.cacheType == .disk && result.image?.width == 256)
    }
    return (median(times), cache.diskImageData(forKey: manager.cacheKey(for: url, context: context))?.count ?? 0)
}

let largeJPEG = try largePhotoJPEG()
let largeFile = root.appendingPathComponent("large.jpg")
try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
try largeJPEG.write(to: largeFile)
let thumbnailContext = ImageContext(thumbnailPixelSize: PixelSize(width: 256, height: 256))
// Today's entry: the first load stores the thumbnail's own bytes.
let thumbnailCache = ImageCache(directory: root.appendingPathComponent("thumbnails"), configuration: cacheConfiguration)
_ = try await ImageManager(cache: thumbnailCache, loader: ImageDownloader())
    .loadImage(with: largeFile, context: thumbnailContext)
await thumbnailCache.flush()
let (thumbnailHit, thumbnailBytes) = try await thumbnailDiskHits(
    cache: thumbnailCache,
    url: largeFile,
    context: thumbnailContext,
    hits: 21
)
// The entry as it was before: the original's bytes under the thumbnail's key.
let originalsCache = ImageCache(directory: root.appendingPathComponent("originals"), configuration: cacheConfiguration)
originalsCache.store(
    nil,
    data: largeJPEG,
    forKey: warmManager.cacheKey(for: largeFile, context: thumbnailContext),
    cacheType: .disk
)
await originalsCache.flush()
let (originalHit, originalBytes) = try await thumbnailDiskHits(
    cache: originalsCache,
    url: largeFile,
    context: thumbnailContext,
    hits: 21
)

// MARK: Cold loads

let jpeg = try photoJPEG()
let origin = try await OriginServer.start()
for index in 0..<imageCount { origin.setRoute("/img/\(index).jpg", .data(jpeg, contentType: "image/jpeg")) }

/// Seconds for the cold loads of one round: (manager, downloader alone).
func coldRound(
    _ round: Int,
    origin: OriginServer,
    root: URL,
    configuration: ImageCache.Configuration
) async throws
    -> (Double, Double, Double, Double)
{
    let downloader = ImageDownloader()
    // Fresh query strings each round so every load is cold for both sides.
    let downloaderSeconds = try await timeLoads(count: imageCount, width: 6) { index in
        _ = try await downloader.image(with: origin.url("/img/\(index).jpg?d\(round)"))
    }
    let cache = ImageCache(directory: root.appendingPathComponent("cold-\(round)"), configuration: configuration)
    let manager = ImageManager(cache: cache, loader: ImageDownloader())
    let start = ContinuousClock.now
    let managerSeconds = try await timeLoads(count: imageCount, width: 6) { index in
        _ = try await manager.loadImage(with: origin.url("/img/\(index).jpg?m\(round)"))
    }
    // The disk writes run at background priority behind the loads: when are they all on disk?
    await manager.flush()
    let flushedSeconds = seconds(ContinuousClock.now - start)
    let memoryOnlySeconds = try await timeLoads(count: imageCount, width: 6) { index in
        _ = try await manager.loadImage(with: origin.url("/img/\(index).jpg?n\(round)"), options: .cacheMemoryOnly)
    }
    return (managerSeconds, memoryOnlySeconds, downloaderSeconds, flushedSeconds)
}

var managerTimes: [Double] = []
var memoryOnlyTimes: [Double] = []
var downloaderTimes: [Double] = []
var flushedTimes: [Double] = []
for round in 0...rounds {
    let (managerSeconds, memoryOnlySeconds, downloaderSeconds, flushedSeconds) = try await coldRound(
        round,
        origin: origin,
        root: root,
        configuration: cacheConfiguration
    )
    if round > 0 {
        managerTimes.append(managerSeconds)
        memoryOnlyTimes.append(memoryOnlySeconds)
        downloaderTimes.append(downloaderSeconds)
        flushedTimes.append(flushedSeconds)
    }
}
await origin.stop()

let (direct, viaAsync, viaCompletion) = (median(directHit), median(asyncHit), median(completionHit))
print("| ImageManager | figure |")
print("|---|---:|")
print("| direct memory-cache hit | \(String(format: "%.3f", direct * 1e6)) µs |")
print(
    "| manager memory hit, async | \(String(format: "%.3f", viaAsync * 1e6)) µs (+\(String(format: "%.3f", (viaAsync - direct) * 1e6)) µs) |"
)
print(
    "| manager memory hit, completion handler | \(String(format: "%.3f", viaCompletion * 1e6)) µs (+\(String(format: "%.3f", (viaCompletion - direct) * 1e6)) µs) |"
)
print(
    "| 256² thumbnail of a 12 MP JPEG, disk hit: the thumbnail's own entry | \(String(format: "%.2f", thumbnailHit * 1000)) ms, \(thumbnailBytes) bytes read |"
)
print(
    "| the same hit when the entry held the original (as before) | \(String(format: "%.2f", originalHit * 1000)) ms, \(originalBytes) bytes read |"
)
let (managerCold, memoryOnlyCold, downloaderCold) = (
    median(managerTimes), median(memoryOnlyTimes), median(downloaderTimes)
)
print("| \(imageCount) cold loads, downloader alone | \(String(format: "%.0f", downloaderCold * 1000)) ms |")
print(
    "| \(imageCount) cold loads, manager (query, download, decode, store) | \(String(format: "%.0f", managerCold * 1000)) ms (\(String(format: "%+.1f", (managerCold / downloaderCold - 1) * 100)) %) |"
)
print(
    "| the same, until every disk write is flushed | \(String(format: "%.0f", median(flushedTimes) * 1000)) ms (\(String(format: "%+.1f", (median(flushedTimes) / downloaderCold - 1) * 100)) %) |"
)
print(
    "| \(imageCount) cold loads, manager with cacheMemoryOnly (no disk writes) | \(String(format: "%.0f", memoryOnlyCold * 1000)) ms (\(String(format: "%+.1f", (memoryOnlyCold / downloaderCold - 1) * 100)) %) |"
)
