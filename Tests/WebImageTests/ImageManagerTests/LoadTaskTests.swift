import Foundation
import Testing
@_spi(WebImageInternals) import WebImageCoders
import WebImageOrigin
import WebImageTestSupport

@testable import WebImage

/// An ``ImageCache`` behind a counter of the queries that reach it.
private final class CountingCache: ImageCaching {
    let base: ImageCache
    let queries = Locked<[String]>([])

    init(_ base: ImageCache) { self.base = base }

    func imageFromMemoryCache(forKey key: String) -> DecodedImage? { base.imageFromMemoryCache(forKey: key) }

    func queryImage(
        forKey key: String,
        options: ImageOptions,
        context: ImageContext?,
        cacheType: ImageCacheType,
        completion: @escaping @Sendable (ImageCacheQueryResult) -> Void
    ) -> (any ImageCacheOperation)? {
        queries.withLock { $0.append(key) }
        return base.queryImage(
            forKey: key,
            options: options,
            context: context,
            cacheType: cacheType,
            completion: completion
        )
    }

    func store(
        _ image: DecodedImage?,
        data: Data?,
        forKey key: String,
        metadata: DiskCacheMetadata?,
        cacheType: ImageCacheType,
        completion: (@Sendable ((any Error)?) -> Void)?
    ) {
        base.store(image, data: data, forKey: key, metadata: metadata, cacheType: cacheType, completion: completion)
    }

    func removeImage(forKey key: String, cacheType: ImageCacheType, completion: (@Sendable () -> Void)?) {
        base.removeImage(forKey: key, cacheType: cacheType, completion: completion)
    }

    func containsImage(
        forKey key: String,
        cacheType: ImageCacheType,
        completion: @escaping @Sendable (ImageCacheType) -> Void
    ) {
        base.containsImage(forKey: key, cacheType: cacheType, completion: completion)
    }

    func clear(cacheType: ImageCacheType, completion: (@Sendable () -> Void)?) {
        base.clear(cacheType: cacheType, completion: completion)
    }
}

@Suite("ImageManager load tasks: one query, one load and one store per key", .timeLimit(.minutes(1)))
struct LoadTaskTests {
    @Test("Twenty concurrent loads of a cold key: one cache query, one origin request, twenty images")
    func concurrentLoadsShareOneTask() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let cache = CountingCache(CacheFixtures.cache(folder))
        let manager = ImageManager(cache: cache, loader: DownloaderFixtures.downloader())
        let origin = try await OriginServer.start()
        origin.setRoute("/a.png", DownloaderFixtures.route(behavior: .init(delay: .milliseconds(200))))
        let url = origin.url("/a.png")
        let results = Locked<[String]>([])
        for _ in 0..<20 {
            manager.loadImage(with: url) { image, _, error, cacheType, finished, _ in
                guard finished else { return }
                results.withLock { $0.append(error?.code.rawValue ?? "\(cacheType.rawValue) \(image?.width ?? 0)") }
            }
        }
        await DownloaderFixtures.wait { results.value.count == 20 }
        #expect(results.value == Array(repeating: "none 32", count: 20))
        #expect(cache.queries.value == [url.absoluteString])
        #expect(origin.requestCount(for: "/a.png") == 1)
        await DownloaderFixtures.wait { !manager.isRunning && manager.loadTaskCount == 0 }
        #expect(!manager.isRunning)
        #expect(manager.loadTaskCount == 0)
        await origin.stop()
    }

    @Test("One caller cancelling leaves the others their image; all cancelling stops the download")
    func cancellation() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        let slow = OriginRoute.Behavior(chunkSize: 64, chunkInterval: .milliseconds(20))
        origin.setRoute("/shared.png", DownloaderFixtures.route(behavior: slow))
        origin.setRoute("/dropped.png", DownloaderFixtures.route(Data(count: 200_000), behavior: slow))
        let outcomes = Locked<[String: String]>([:])
        func load(_ path: String, as name: String) -> ImageLoadOperation {
            fixture.manager.loadImage(with: origin.url(path)) { image, _, error, _, finished, _ in
                guard finished else { return }
                outcomes.withLock { $0[name] = error?.code.rawValue ?? "\(image?.width ?? 0)" }
            }
        }
        let first = load("/shared.png", as: "first")
        _ = load("/shared.png", as: "second")
        first.cancel()
        #expect(outcomes.value["first"] == "cancelled")
        await DownloaderFixtures.wait { outcomes.value["second"] != nil }
        #expect(outcomes.value["second"] == "32")
        #expect(origin.requestCount(for: "/shared.png") == 1)

        let dropped = (0..<3).map { load("/dropped.png", as: "dropped \($0)") }
        await DownloaderFixtures.wait { origin.requestCount(for: "/dropped.png") == 1 }
        for operation in dropped { operation.cancel() }
        await DownloaderFixtures.wait { origin.abandonedResponses == 1 }
        #expect(origin.abandonedResponses == 1, "the last caller's cancel stopped the download")
        #expect((0..<3).map { outcomes.value["dropped \($0)"] } == Array(repeating: "cancelled", count: 3))
        await origin.stop()
    }

    @Test("Hooks that call back into the manager do not deadlock")
    func reentrantHooks() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        origin.setRoute("/a.png", DownloaderFixtures.route())
        origin.setRoute("/b.png", DownloaderFixtures.route())
        let manager = fixture.manager
        let nested = Locked<[String]>([])
        // The delegate is called with the manager: it asks about it and starts another load.
        final class Reentrant: ImageManagerDelegate {
            let nested: Locked<[String]>
            let other: URL
            init(nested: Locked<[String]>, other: URL) {
                self.nested = nested
                self.other = other
            }
            func imageManager(_ manager: ImageManager, shouldDownloadImageFor url: URL) -> Bool {
                _ = manager.isRunning
                _ = manager.failedURLs
                if url.path == "/a.png" {
                    manager.loadImage(with: other) { [nested] _, _, error, _, finished, _ in
                        if finished { nested.withLock { $0.append(error?.code.rawValue ?? "ok") } }
                    }
                }
                return true
            }
            func imageManager(
                _ manager: ImageManager,
                transformDownloadedImage image: DecodedImage,
                for url: URL
            )
                -> DecodedImage?
            {
                _ = manager.cacheKey(for: other)
                return image
            }
        }
        let delegate = Reentrant(nested: nested, other: origin.url("/b.png"))
        let delegating = ImageManager(
            cache: manager.imageCache,
            loader: manager.imageLoader,
            configuration: { () -> ImageManager.Configuration in
                var configuration = ImageManager.Configuration()
                configuration.delegate = delegate
                return configuration
            }()
        )
        let result = try await delegating.loadImage(with: origin.url("/a.png"))
        #expect(result.image?.width == 32)
        withExtendedLifetime(delegate) {}
        await DownloaderFixtures.wait { nested.value.count == 1 }
        #expect(nested.value == ["ok"])
        // A completion that starts a load of the same key, synchronously, gets it too.
        let again = Locked<String?>(nil)
        manager.loadImage(with: origin.url("/a.png")) { _, _, _, _, finished, _ in
            guard finished else { return }
            manager.loadImage(with: origin.url("/a.png")) { _, _, _, cacheType, finished, _ in
                if finished { again.withLock { $0 = cacheType.rawValue } }
            }
        }
        #expect(again.value == "memory", "memory hits complete on the caller's thread")
        await origin.stop()
    }
}

/// Counts its transforms and returns the image unchanged.
private final class CountingTransformer: ImageTransformer {
    let transforms = Locked(0)
    var transformerKey: String { "Counting" }

    func transform(_ image: DecodedImage, forKey key: String) -> DecodedImage? {
        transforms.withLock { $0 += 1 }
        return image
    }
}

@Suite("ImageManager's transform stage", .timeLimit(.minutes(1)))
struct TransformStageTests {
    @Test("Transforms run on the context's transform queue; a load cancelled while its transform waits skips it")
    func transformQueue() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        origin.setRoute("/a.png", DownloaderFixtures.route())
        origin.setRoute("/b.png", DownloaderFixtures.route())
        let queue = ImageWorkQueue(width: 1)
        let release = DispatchSemaphore(value: 0)
        queue.enqueue { release.wait() }  // holds the only place
        let transformer = CountingTransformer()
        var context = ImageContext(transformer: transformer)
        context.transformQueue = queue
        let outcomes = Locked<[String: String]>([:])
        func load(_ path: String) -> ImageLoadOperation {
            fixture.manager.loadImage(with: origin.url(path), context: context) { image, _, error, _, finished, _ in
                guard finished else { return }
                outcomes.withLock { $0[path] = error?.code.rawValue ?? "\(image?.width ?? 0)" }
            }
        }
        _ = load("/a.png")
        let cancelled = load("/b.png")
        await DownloaderFixtures.wait { queue.waitingCount == 2 }
        #expect(queue.waitingCount == 2, "both downloads decoded; their transforms wait for the place")
        #expect(outcomes.value.isEmpty)
        cancelled.cancel()
        #expect(outcomes.value == ["/b.png": "cancelled"])
        release.signal()
        await DownloaderFixtures.wait { outcomes.value.count == 2 }
        #expect(outcomes.value == ["/a.png": "32", "/b.png": "cancelled"])
        await DownloaderFixtures.wait { queue.waitingCount == 0 && queue.runningCount == 0 }
        #expect(transformer.transforms.value == 1, "the cancelled load's transform never ran")
        await origin.stop()
    }
}

@Suite("Stress: load tasks under concurrent loads and cancellations", .timeLimit(.minutes(2)))
struct LoadTaskStressTests {
    @Test("Stress: 2,000 loads over 100 keys with random cancellations: one request per key, one completion each")
    func manyLoads() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        origin.recordsRequests = true
        for key in 0..<100 {
            origin.setRoute("/\(key).png", DownloaderFixtures.route(behavior: .init(delay: .milliseconds(20))))
        }
        let completions = Locked<[Int: Int]>([:])
        var generator = SplitMix64(seed: 2_000)
        var operations: [(Int, ImageLoadOperation, Bool)] = []
        for index in 0..<2_000 {
            let key = index % 100
            // The first load of each key stays, so each key is requested exactly once.
            let cancels = index >= 100 && generator.next() % 3 == 0
            let operation = fixture.manager.loadImage(with: origin.url("/\(key).png")) { _, _, _, _, finished, _ in
                if finished { completions.withLock { $0[index, default: 0] += 1 } }
            }
            operations.append((index, operation, cancels))
            if index % 50 == 49 { await Task.yield() }
        }
        for (_, operation, cancels) in operations where cancels { operation.cancel() }
        await DownloaderFixtures.wait({ completions.value.count == 2_000 }, timeout: .seconds(60))
        #expect(completions.value.count == 2_000)
        #expect(completions.value.values.allSatisfy { $0 == 1 }, "each operation completed exactly once")
        for key in 0..<100 { #expect(origin.requestCount(for: "/\(key).png") == 1, "key \(key)") }
        await DownloaderFixtures.wait { !fixture.manager.isRunning }
        #expect(!fixture.manager.isRunning)
        await DownloaderFixtures.wait { fixture.manager.loadTaskCount == 0 }
        #expect(fixture.manager.loadTaskCount == 0, "every task left the pool")
        await origin.stop()
    }
}
