import Foundation
import Synchronization
import Testing
import WebImage
@_spi(WebImageInternals) import WebImageCoders
import WebImageTestSupport

enum CacheFixtures {
    static let pngImage = DecodedImage(bitmap: GeneratedImages.gradient(width: 64, height: 48), format: .png)
    static let png: Data = try! PNGCoder().encode(pngImage, as: .png, options: .init())

    static func cache(
        _ folder: TemporaryDirectory,
        _ configure: (inout ImageCache.Configuration) -> Void = { _ in }
    )
        -> ImageCache
    {
        var configuration = ImageCache.Configuration()
        configuration.cleanupInterval = nil
        configure(&configuration)
        return ImageCache(directory: folder.url.appendingPathComponent("cache"), configuration: configuration)
    }
}

@Suite("ImageCache", .timeLimit(.minutes(1)))
struct ImageCacheTests {
    @Test("Memory hit at once; after clearing memory a disk hit, decoded and promoted")
    func memoryThenDisk() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let cache = CacheFixtures.cache(folder)
        try await cache.store(
            CacheFixtures.pngImage,
            data: CacheFixtures.png,
            forKey: "https://example.com/a.png",
            metadata: DiskCacheMetadata(etag: "\"e1\"")
        )
        let memory = await cache.queryImage(forKey: "https://example.com/a.png")
        #expect(memory.cacheType == .memory)
        #expect(memory.image?.isSameInstance(as: CacheFixtures.pngImage) == true)
        #expect(memory.data == nil)

        cache.clearMemory()
        #expect(cache.imageFromMemoryCache(forKey: "https://example.com/a.png") == nil)
        let disk = await cache.queryImage(forKey: "https://example.com/a.png")
        #expect(disk.cacheType == .disk)
        #expect(disk.image?.width == 64)
        #expect(disk.image?.bitmap == CacheFixtures.pngImage.bitmap)
        #expect(disk.data == CacheFixtures.png)
        #expect(disk.metadata?.etag == "\"e1\"")
        #expect(disk.metadata?.contentType == "image/png")
        #expect(cache.imageFromMemoryCache(forKey: "https://example.com/a.png") != nil)

        // queryMemoryData reads the bytes beside a memory hit.
        let both = await cache.queryImage(forKey: "https://example.com/a.png", options: .queryMemoryData)
        #expect(both.cacheType == .memory)
        #expect(both.data == CacheFixtures.png)
        #expect(await cache.queryImage(forKey: "missing").cacheType == .none)
    }

    @Test("Disk hits honour avoidDecodeImage, the thumbnail size and a store type without memory")
    func diskOptions() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let cache = CacheFixtures.cache(folder)
        try await cache.store(nil, data: CacheFixtures.png, forKey: "k")
        #expect(cache.imageFromMemoryCache(forKey: "k") == nil)
        let raw = await cache.queryImage(forKey: "k", options: .avoidDecodeImage)
        #expect(raw.image == nil)
        #expect(raw.data == CacheFixtures.png)
        #expect(raw.cacheType == .disk)

        var context = ImageContext(thumbnailPixelSize: PixelSize(width: 16, height: 16))
        context.storeCacheType = .disk
        let thumbnail = await cache.queryImage(forKey: "k", context: context)
        #expect(thumbnail.image.map { max($0.width, $0.height) } == 16)
        #expect(cache.imageFromMemoryCache(forKey: "k") == nil)

        #expect(cache.imageFromDiskCache(forKey: "k")?.width == 64)
        #expect(cache.imageFromMemoryCache(forKey: "k") != nil)
        #expect(cache.diskImageDataExists(forKey: "k"))
        #expect(await cache.diskImageExists(withKey: "k"))
        #expect(cache.diskImageData(forKey: "k") == CacheFixtures.png)
    }

    @Test("An image without data is stored re-encoded; memory-only stores leave the disk empty")
    func storing() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let cache = CacheFixtures.cache(folder)
        try await cache.store(CacheFixtures.pngImage, data: nil, forKey: "encoded")
        let stored = try #require(cache.diskImageData(forKey: "encoded"))
        #expect(try ImageCodersManager.shared.decode(stored).bitmap == CacheFixtures.pngImage.bitmap)

        try await cache.store(CacheFixtures.pngImage, data: CacheFixtures.png, forKey: "memory", cacheType: .memory)
        #expect(cache.imageFromMemoryCache(forKey: "memory") != nil)
        #expect(!cache.diskImageDataExists(forKey: "memory"))
        #expect(await cache.totalDiskCount() == 1)
        #expect(await cache.totalDiskSize() > stored.count)

        #expect(await cache.containsImage(forKey: "memory") == .memory)
        cache.clearMemory()
        #expect(await cache.containsImage(forKey: "encoded") == .disk)
        await cache.removeImage(forKey: "encoded")
        #expect(await cache.containsImage(forKey: "encoded") == .none)

        try await cache.store(nil, data: CacheFixtures.png, forKey: "again")
        await cache.clear()
        #expect(await cache.totalDiskCount() == 0)
    }

    @Test("A failed disk write reports an error naming the file")
    func writeFailure() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        // The cache folder's place is taken by a file: every write must fail.
        try Data("x".utf8).write(to: folder.file("cache"))
        let cache = CacheFixtures.cache(folder)
        await #expect {
            try await cache.store(nil, data: CacheFixtures.png, forKey: "k")
        } throws: { error in
            "\(error)".contains(folder.file("cache").path)
        }
    }

    @Test("A cancelled disk query never calls its completion; an async one returns a miss")
    func cancellation() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        // One read at a time, so the parked job below holds the only place.
        let cache = CacheFixtures.cache(folder) { $0.diskReadQueue = ImageWorkQueue(width: 1) }
        try await cache.store(nil, data: CacheFixtures.png, forKey: "k")
        let calls = Atomic(0)
        // Park the I/O queue behind a slow job so the query is still waiting when cancelled.
        let gate = DispatchSemaphore(value: 0)
        cache.diskImageExists(withKey: "k") { _ in gate.wait() }
        let operation = cache.queryImage(forKey: "k", options: [], context: nil, cacheType: .all) { _ in
            calls.add(1, ordering: .relaxed)
        }
        operation?.cancel()
        gate.signal()
        _ = await cache.diskImageExists(withKey: "k")  // the queue has passed the query
        try await Task.sleep(for: .milliseconds(50))
        #expect(operation != nil)
        #expect(calls.load(ordering: .relaxed) == 0)

        let task = Task { await cache.queryImage(forKey: "k") }
        task.cancel()
        let result = await task.value
        #expect(result.cacheType == .none || result.cacheType == .disk)
    }

    @Test("Disk reads run on the configured queue by priority; a query cancelled while waiting gives its place up")
    func readQueue() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let queue = ImageWorkQueue(width: 1)
        let cache = CacheFixtures.cache(folder) { $0.diskReadQueue = queue }
        for key in ["low", "normal", "high", "cancelled"] {
            try await cache.store(nil, data: CacheFixtures.png, forKey: key, cacheType: .disk)
        }
        let gate = DispatchSemaphore(value: 0)
        queue.enqueue { gate.wait() }
        let order = Protected<[String]>([])
        let done = DispatchGroup()
        func query(_ key: String, _ options: ImageOptions) -> (any ImageCacheOperation)? {
            done.enter()
            return cache.queryImage(
                forKey: key,
                options: options.union(.avoidDecodeImage),
                context: nil,
                cacheType: .disk
            ) {
                result in
                if result.data != nil { order.withLock { $0.append(key) } }
                done.leave()
            }
        }
        _ = query("low", .lowPriority)
        let cancelled = query("cancelled", [])
        _ = query("normal", [])
        _ = query("high", .highPriority)
        #expect(queue.waitingCount == 4)
        cancelled?.cancel()
        done.leave()  // a cancelled query never completes
        #expect(queue.waitingCount == 3, "the cancelled read left the queue")
        gate.signal()
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                done.wait()
                continuation.resume()
            }
        }
        #expect(order.withLock { $0 } == ["high", "normal", "low"])
        #expect(queue.peakRunningCount == 1)
    }

    @Test("Disk writes past maximumQueuedWriteBytes are refused with the cause; the queued ones land")
    func queuedWriteBound() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let failures = Protected<[String]>([])
        let cache = CacheFixtures.cache(folder) {
            $0.maximumQueuedWriteBytes = 1500
            $0.diskWriteFailureHandler = { key, _ in failures.withLock { $0.append(key) } }
        }
        // Park the write queue (a flush's completion runs on it) so the writes wait.
        let gate = DispatchSemaphore(value: 0)
        cache.flush { gate.wait() }
        let kilobyte = Data(repeating: 7, count: 1000)
        let errors = Protected<[String: String]>([:])
        for key in ["first", "second"] {
            cache.store(nil, data: kilobyte, forKey: key, metadata: nil, cacheType: .all) { error in
                errors.withLock { $0[key] = error.map { "\($0)" } ?? "ok" }
            }
        }
        #expect(errors.withLock { $0["second"] }?.contains("maximumQueuedWriteBytes") == true)
        #expect(failures.withLock { $0 } == ["second"])
        gate.signal()
        await cache.flush()
        #expect(errors.withLock { $0["first"] } == "ok")
        #expect(cache.diskImageDataExists(forKey: "first"))
        #expect(!cache.diskImageDataExists(forKey: "second"))
        // With the queue drained, writes are taken again.
        try await cache.store(nil, data: kilobyte, forKey: "third", cacheType: .disk)
        #expect(cache.diskImageDataExists(forKey: "third"))
    }

    @Test("A chain of caches answers from the first that has the key and stores into all")
    func chain() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let first = CacheFixtures.cache(folder) { $0.usesDiskCache = false }
        let second = ImageCache(
            directory: folder.url.appendingPathComponent("second"),
            configuration: {
                var c = ImageCache.Configuration()
                c.cleanupInterval = nil
                return c
            }()
        )
        let chain = ImageCachesManager(caches: [first, second])
        try await second.store(nil, data: CacheFixtures.png, forKey: "only-second")
        let found = await chain.queryImage(forKey: "only-second")
        #expect(found.cacheType == .disk)
        #expect(found.image?.width == 64)
        try await chain.store(CacheFixtures.pngImage, data: CacheFixtures.png, forKey: "both")
        #expect(first.imageFromMemoryCache(forKey: "both") != nil)
        #expect(second.diskImageDataExists(forKey: "both"))
        #expect(await chain.containsImage(forKey: "both") == .memory)
        await chain.removeImage(forKey: "both")
        #expect(await chain.containsImage(forKey: "both") == .none)
        #expect(await chain.queryImage(forKey: "nowhere").cacheType == .none)
    }

    @Test("removeExpired through a chain reaches every cache: entries past their age go, fresh ones stay")
    func removeExpiredThroughChain() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let clock = Locked(Date(timeIntervalSince1970: 1_800_000_000))
        let caches = ["first", "second"].map { name in
            var configuration = ImageCache.Configuration()
            configuration.cleanupInterval = nil
            configuration.disk.maxAge = .seconds(60)
            configuration.disk.now = { clock.value }
            return ImageCache(directory: folder.url.appendingPathComponent(name), configuration: configuration)
        }
        let chain: any ImageCaching = ImageCachesManager(caches: caches)
        for cache in caches { try await cache.store(nil, data: CacheFixtures.png, forKey: "old", cacheType: .disk) }
        clock.withLock { $0 += 120 }
        for cache in caches { try await cache.store(nil, data: CacheFixtures.png, forKey: "new", cacheType: .disk) }
        await chain.removeExpired()
        for cache in caches {
            #expect(!cache.diskImageDataExists(forKey: "old"))
            #expect(cache.diskImageDataExists(forKey: "new"))
        }
    }

    @Test("Namespaces become one safe folder under the root")
    func namespaces() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        for (namespace, expected) in [("default", "default"), ("../evil", ".._evil"), ("..", "_.."), ("a/b", "a_b")] {
            let cache = ImageCache(namespace: namespace, root: folder.url)
            #expect(cache.diskCache.directory.lastPathComponent == expected)
            #expect(cache.diskCache.directory.deletingLastPathComponent().path == folder.url.standardizedFileURL.path)
        }
    }
}
