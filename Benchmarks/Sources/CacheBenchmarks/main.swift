import CDirectCodecs
import Foundation
import WebImage

#if canImport(Glibc)
import Glibc
#endif

// ImageCache figures: memory hits per second (1 and 2 threads), disk data hit latency for
// 100 KB entries beside a plain POSIX read of the same files, store throughput, the time to
// open a cache holding 100,000 entries and answer its first hit, and the time to trim it.
//
//   swift run -c release --package-path Benchmarks webimage-cache-benchmarks [--entries N]

func argument(_ name: String, default value: Int) -> Int {
    CommandLine.arguments.firstIndex(of: name).flatMap {
        CommandLine.arguments.indices.contains($0 + 1) ? Int(CommandLine.arguments[$0 + 1]) : nil
    } ?? value
}

let entryCount = argument("--entries", default: 100_000)
let clock = ContinuousClock()

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
}

let root = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("webimage-cache-bench-\(getpid())")
defer { try? FileManager.default.removeItem(at: root) }

// MARK: Memory hits

let image = DecodedImage(
    bitmap: Bitmap(width: 64, height: 64, pixels: [UInt8](repeating: 128, count: 64 * 64 * 4)),
    format: .png
)
let memory = MemoryCache()
let keys = (0..<1000).map { "https://images.example.com/photos/\($0)/large.jpg?w=640" }
// One image per key, as distinct URLs give: threads hitting different keys then share no
// reference count (one image under every key would make each hit contend on its count).
for key in keys { memory.setImage(DecodedImage(bitmap: image.bitmap, format: .png), forKey: key) }

/// Hits per second from `threads` threads. `shared`: every thread looks up all 1000 keys (each
/// hit then moves cache lines the other thread wrote: the image's reference count, the shard's
/// lock and LRU links); otherwise each thread looks up its own share of the keys, as workers
/// serving different images do.
func memoryHits(threads: Int, perThread: Int, shared: Bool = true) -> Double {
    let start = clock.now
    DispatchQueue.concurrentPerform(iterations: threads) { thread in
        // Each thread holds its own references: the globals' reference counts are not the subject.
        let cache = memory
        let mine = shared ? keys : keys.enumerated().filter { $0.offset % threads == thread }.map(\.element)
        var found = 0
        var index = thread * 37 % mine.count
        for _ in 0..<perThread {
            if cache.image(forKey: mine[index]) != nil { found += 1 }
            index = index &+ 7919
            if index >= mine.count { index %= mine.count }
        }
        precondition(found == perThread)
    }
    return Double(threads * perThread) / seconds(clock.now - start)
}

_ = memoryHits(threads: 1, perThread: 200_000)
let oneThread = (0..<5).map { _ in memoryHits(threads: 1, perThread: 2_000_000) }.sorted()[2]
let twoThreads = (0..<5).map { _ in memoryHits(threads: 2, perThread: 2_000_000) }.sorted()[2]
let twoThreadsOwnKeys = (0..<5).map { _ in memoryHits(threads: 2, perThread: 2_000_000, shared: false) }.sorted()[2]
let stripedOne = (0..<5).map { _ in direct_striped_lock_rate(1, 5_000_000) }.sorted()[2]
let stripedTwo = (0..<5).map { _ in direct_striped_lock_rate(2, 5_000_000) }.sorted()[2]

// MARK: Disk hits, stores

var diskConfiguration = ImageCache.Configuration()
diskConfiguration.cleanupInterval = nil
let hitsCache = ImageCache(directory: root.appendingPathComponent("hits"), configuration: diskConfiguration)
let payload = Data((0..<100 * 1024).map { UInt8(truncatingIfNeeded: $0 &* 31) })
let storeCount = 2000
let storeStart = clock.now
for index in 0..<storeCount { try hitsCache.diskCache.store(payload, forKey: "https://e.com/\(index).jpg") }
let storesPerSecond = Double(storeCount) / seconds(clock.now - storeStart)

func plainRead(_ path: String) -> Int {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    precondition(fd >= 0)
    defer { close(fd) }
    var status = stat()
    fstat(fd, &status)
    let size = Int(status.st_size)
    let buffer = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 16)
    defer { buffer.deallocate() }
    var filled = 0
    while filled < size {
        let count = read(fd, buffer + filled, size - filled)
        precondition(count > 0)
        filled += count
    }
    return filled
}

var cacheLatencies: [Double] = []
var plainLatencies: [Double] = []
for round in 0..<5 {
    for index in 0..<storeCount {
        let key = "https://e.com/\(index).jpg"
        let path = hitsCache.diskCache.fileURL(forKey: key).path
        if (round + index) % 2 == 0 {
            let a = clock.now
            precondition(hitsCache.diskImageData(forKey: key)?.count == payload.count)
            let b = clock.now
            precondition(plainRead(path) > payload.count)
            let c = clock.now
            if round > 0 {
                cacheLatencies.append(seconds(b - a))
                plainLatencies.append(seconds(c - b))
            }
        } else {
            let a = clock.now
            precondition(plainRead(path) > payload.count)
            let b = clock.now
            precondition(hitsCache.diskImageData(forKey: key)?.count == payload.count)
            let c = clock.now
            if round > 0 {
                plainLatencies.append(seconds(b - a))
                cacheLatencies.append(seconds(c - b))
            }
        }
    }
}

// First reads: a cache that has not seen these files yet hashes each entry's bytes (XXH64) to
// check them; the hits above are repeated reads of files this process wrote, which skip the hash.
var firstReadLatencies: [Double] = []
for _ in 0..<3 {
    let fresh = DiskCache(directory: hitsCache.diskCache.directory)
    for index in 0..<storeCount {
        let a = clock.now
        precondition(fresh.data(forKey: "https://e.com/\(index).jpg")?.count == payload.count)
        firstReadLatencies.append(seconds(clock.now - a))
    }
}

// MARK: Open with many entries, trim

let bigDirectory = root.appendingPathComponent("big")
let small = Data(repeating: 7, count: 512)
do {
    let filler = DiskCache(directory: bigDirectory)
    for index in 0..<entryCount { try filler.store(small, forKey: "https://e.com/big/\(index).png") }
}
let openStart = clock.now
let opened = ImageCache(directory: bigDirectory, configuration: diskConfiguration)
let firstHit = await opened.queryImage(forKey: "https://e.com/big/\(entryCount / 2).png", options: .avoidDecodeImage)
let openSeconds = seconds(clock.now - openStart)
precondition(firstHit.data == small)

var trimConfiguration = DiskCache.Configuration()
trimConfiguration.maxSize = entryCount * 600 / 2
let trimStart = clock.now
let trimmed = DiskCache(directory: bigDirectory, configuration: trimConfiguration).removeExpiredEntries()
let trimSeconds = seconds(clock.now - trimStart)

print("| ImageCache | figure |")
print("|---|---:|")
print("| memory hits, 1 thread | \(String(format: "%.1f", oneThread / 1e6)) M/s |")
print(
    "| memory hits, 2 threads, the same 1000 keys | \(String(format: "%.1f", twoThreads / 1e6)) M/s (\(String(format: "%.2f", twoThreads / oneThread))× one thread) |"
)
print(
    "| memory hits, 2 threads, 500 keys each | \(String(format: "%.1f", twoThreadsOwnKeys / 1e6)) M/s (\(String(format: "%.2f", twoThreadsOwnKeys / oneThread))× one thread) |"
)
print(
    "| C reference: 16 striped pthread mutexes, lock + unlock, 1 / 2 threads | \(String(format: "%.0f", stripedOne / 1e6)) / \(String(format: "%.0f", stripedTwo / 1e6)) M/s (\(String(format: "%.2f", stripedTwo / stripedOne))×) |"
)
print(
    "| disk data hit, 100 KB, p50 / p99 | \(String(format: "%.1f", percentile(cacheLatencies, 0.5) * 1e6)) / \(String(format: "%.1f", percentile(cacheLatencies, 0.99) * 1e6)) µs |"
)
print(
    "| plain POSIX read, same files, p50 / p99 | \(String(format: "%.1f", percentile(plainLatencies, 0.5) * 1e6)) / \(String(format: "%.1f", percentile(plainLatencies, 0.99) * 1e6)) µs |"
)
print(
    "| disk data first read (checksum verified), 100 KB, p50 / p99 | \(String(format: "%.1f", percentile(firstReadLatencies, 0.5) * 1e6)) / \(String(format: "%.1f", percentile(firstReadLatencies, 0.99) * 1e6)) µs |"
)
print(
    "| disk hit p50 / plain read p50 | \(String(format: "%.2f", percentile(cacheLatencies, 0.5) / percentile(plainLatencies, 0.5)))× |"
)
print("| stores, 100 KB, no fsync | \(Int(storesPerSecond)) /s |")
print("| open + first hit, \(entryCount) entries | \(String(format: "%.2f", openSeconds * 1000)) ms |")
print(
    "| trim \(entryCount) entries to half the size limit | \(String(format: "%.0f", trimSeconds * 1000)) ms (removed \(trimmed.trimmedRemoved)) |"
)
