import AsyncHTTPClient
import BenchmarkSupport
import CDirectCodecs
import Foundation
import NIOCore
import WebImage
import WebImageOrigin

// ImageDownloader throughput over loopback, 6 loads at a time, each beside the same work done
// with raw AsyncHTTPClient in the same run: N distinct ~100 KB JPEGs without decoding, the same
// with decoding (raw: AsyncHTTPClient + a direct libjpeg-turbo decode in each task), and N
// callers of one URL (one request). Medians of rounds. Last, what progressiveLoad costs over a
// plain load of the same large body (previews must not copy the body once per chunk).
//
//   swift run -c release --package-path Benchmarks webimage-downloader-benchmarks [--images N] [--rounds R]
//       [--tuned-allocator]

let imageCount = argument("--images", default: 1000)
// --tuned-allocator: what a service gets from SystemMemory.tuneAllocatorForImageDecoding().
let tunedAllocator = CommandLine.arguments.contains("--tuned-allocator")
if tunedAllocator { SystemMemory.tuneAllocatorForImageDecoding() }
let rounds = argument("--rounds", default: 5)
let concurrency = 6

/// Loads per second for `imageCount` loads, `concurrency` at a time.
func throughput(_ load: @escaping @Sendable (Int) async throws -> Void) async throws -> Double {
    Double(imageCount) / (try await timeLoads(count: imageCount, width: concurrency, load))
}

let jpeg = try photoJPEG()
let origin = try await OriginServer.start()
for index in 0..<imageCount { origin.setRoute("/img/\(index).jpg", .data(jpeg, contentType: "image/jpeg")) }
origin.setRoute("/one.jpg", .data(jpeg, contentType: "image/jpeg"))

var raw = HTTPClient.Configuration()
raw.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: concurrency)
raw.decompression = .enabled(limit: .ratio(100))
let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: raw)
let downloader = ImageDownloader()

func rawFetch(_ index: Int) async throws -> ByteBuffer {
    let response = try await client.execute(
        HTTPClientRequest(url: origin.url("/img/\(index).jpg").absoluteString),
        timeout: .seconds(30)
    )
    return try await response.body.collect(upTo: 1 << 24)
}

let sides = [
    "ImageDownloader, no decode", "raw AsyncHTTPClient", "ImageDownloader, decoded",
    "raw AsyncHTTPClient + libjpeg-turbo",
]
var rates = Array(repeating: [Double](), count: sides.count)
for round in 0...rounds {
    for offset in 0..<sides.count {
        let side = (round + offset) % sides.count
        let rate: Double
        switch side {
        case 0:
            rate = try await throughput {
                _ = try await downloader.image(with: origin.url("/img/\($0).jpg"), options: .avoidDecodeImage)
            }
        case 1: rate = try await throughput { _ = try await rawFetch($0) }
        case 2: rate = try await throughput { _ = try await downloader.image(with: origin.url("/img/\($0).jpg")) }
        default:
            rate = try await throughput { index in
                let body = try await rawFetch(index)
                var width: UInt32 = 0
                var height: UInt32 = 0
                let status = body.withUnsafeReadableBytes {
                    direct_jpeg_decode(
                        $0.baseAddress!.assumingMemoryBound(to: UInt8.self),
                        $0.count,
                        1,
                        &width,
                        &height
                    )
                }
                precondition(status == 0)
            }
        }
        if round > 0 { rates[side].append(rate) }
    }
}

// N callers of one URL: all coalesce into one request.
let before = origin.requestCount(for: "/one.jpg")
let clock = ContinuousClock()
let start = clock.now
try await withThrowingTaskGroup(of: Void.self) { group in
    for _ in 0..<imageCount { group.addTask { _ = try await downloader.image(with: origin.url("/one.jpg")) } }
    try await group.waitForAll()
}
let coalescedSeconds = seconds(clock.now - start)
let coalescedRequests = origin.requestCount(for: "/one.jpg") - before

/// Median milliseconds of loading `path` (16 KiB chunks) with and without progressiveLoad.
func progressiveCost(_ path: String) async -> (progressive: Double, plain: Double) {
    var times: [[Double]] = [[], []]
    for round in 0...rounds {
        for (side, options) in [ImageOptions.progressiveLoad, []].enumerated() {
            let clock = ContinuousClock()
            let start = clock.now
            // A distinct URL per load: a load that just finished is still joinable while it delivers.
            let url = origin.url("\(path)?round=\(round)&side=\(side)")
            _ = try? await downloader.image(with: url, options: options)
            if round > 0 { times[side].append(seconds(clock.now - start) * 1000) }
        }
    }
    return (median(times[0]), median(times[1]))
}

var junk = Data([0xFF, 0xD8, 0xFF, 0xE0])  // a JPEG start that never becomes an image
junk.append(Data(repeating: 0x41, count: 32 << 20))
origin.setRoute("/large-junk", .data(junk, contentType: "image/jpeg", behavior: .init(chunkSize: 16 << 10)))
let largeJPEG = try photoJPEG(width: 2000, height: 1500, progressive: true)
origin.setRoute("/large.jpg", .data(largeJPEG, contentType: "image/jpeg", behavior: .init(chunkSize: 16 << 10)))
let junkCost = await progressiveCost("/large-junk")
let jpegCost = await progressiveCost("/large.jpg")

try await client.shutdown().get()
await origin.stop()

let medians = rates.map(median)
print(
    "| \(imageCount) JPEGs of \(jpeg.count / 1024) KB, \(concurrency) at a time\(tunedAllocator ? ", tuned allocator" : "") | loads/s (median of \(rounds)) | ratio |"
)
print("|---|---:|---:|")
print("| \(sides[0]) | \(Int(medians[0])) | \(String(format: "%.3f", medians[0] / medians[1])) of raw |")
print("| \(sides[1]) | \(Int(medians[1])) | |")
print("| \(sides[2]) | \(Int(medians[2])) | \(String(format: "%.3f", medians[2] / medians[3])) of raw + libjpeg |")
print("| \(sides[3]) | \(Int(medians[3])) | |")
print("")
print(
    "\(imageCount) callers of one URL: \(coalescedRequests) request(s), all done in \(String(format: "%.1f", coalescedSeconds * 1000)) ms"
)
print("")
print("| body, 16 KiB chunks | progressiveLoad ms | plain ms | ratio |")
print("|---|---:|---:|---:|")
for (name, cost) in [
    ("32 MiB that never decodes", junkCost), ("progressive JPEG 2000×1500, \(largeJPEG.count / 1024) KB", jpegCost),
] {
    print(
        "| \(name) | \(String(format: "%.1f", cost.progressive)) | \(String(format: "%.1f", cost.plain)) | \(String(format: "%.2f", cost.progressive / cost.plain)) |"
    )
}
