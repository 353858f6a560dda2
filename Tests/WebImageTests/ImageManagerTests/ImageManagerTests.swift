import Foundation
import Testing
import WebImage
import WebImageOrigin
import WebImageTestSupport

/// A manager over a fresh cache in a temporary folder and a fresh downloader.
struct ManagerFixture {
    let folder: TemporaryDirectory
    let cache: ImageCache
    let downloader: ImageDownloader
    let manager: ImageManager

    init(
        downloader: ImageDownloader = DownloaderFixtures.downloader(),
        configuration: ImageManager.Configuration = ImageManager.Configuration()
    ) throws {
        folder = try TemporaryDirectory()
        cache = CacheFixtures.cache(folder)
        self.downloader = downloader
        manager = ImageManager(cache: cache, loader: downloader, configuration: configuration)
    }

    /// Waits for the cache's I/O queue to finish earlier work (stores are asynchronous).
    func settle() async { _ = await cache.totalDiskCount() }
}

/// The deprecated setters, reached through a protocol so the test compiles without warnings.
protocol LegacyManagerHooks {
    func setLegacyHooks(keyFilter: (@Sendable (URL) -> String)?, shouldDownload: (@Sendable (URL) -> Bool)?)
}

extension ImageManager: LegacyManagerHooks {
    @available(*, deprecated, message: "uses the deprecated hook properties on purpose")
    func setLegacyHooks(keyFilter: (@Sendable (URL) -> String)?, shouldDownload: (@Sendable (URL) -> Bool)?) {
        cacheKeyFilter = keyFilter
        shouldDownloadImage = shouldDownload
    }
}

enum ManagerImages {
    static let red = DecodedImage(
        bitmap: GeneratedImages.solid(width: 40, height: 30, color: .init(r: 255, g: 0, b: 0, a: 255)),
        format: .png
    )
    static let blue = DecodedImage(
        bitmap: GeneratedImages.solid(width: 40, height: 30, color: .init(r: 0, g: 0, b: 255, a: 255)),
        format: .png
    )
    static let redPNG = try! PNGCoder().encode(red, as: .png, options: .init())
    static let bluePNG = try! PNGCoder().encode(blue, as: .png, options: .init())
}

@Suite("ImageManager", .timeLimit(.minutes(1)))
struct ImageManagerTests {
    @Test("First load downloads; the second is a memory hit; after clearing memory a disk hit")
    func cacheLevels() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        origin.setRoute("/a.png", .data(ManagerImages.redPNG, contentType: "image/png", cacheControl: "max-age=3600"))
        let url = origin.url("/a.png")

        let first = try await fixture.manager.loadImage(with: url)
        #expect(first.cacheType == .none)
        #expect(first.image?.width == 40)
        #expect(first.data == ManagerImages.redPNG)
        let second = try await fixture.manager.loadImage(with: url)
        #expect(second.cacheType == .memory)
        #expect(origin.requestCount(for: "/a.png") == 1)

        await fixture.settle()
        fixture.cache.clearMemory()
        let third = try await fixture.manager.loadImage(with: url)
        #expect(third.cacheType == .disk)
        #expect(third.image?.bitmap == first.image?.bitmap)
        #expect(origin.requestCount(for: "/a.png") == 1)
        #expect(await fixture.manager.cachedImageExists(for: url) == .memory)
        #expect(await fixture.manager.diskImageExists(for: url))

        // The completion-handler form reports the same, with the URL.
        let done = Locked<[String]>([])
        await withCheckedContinuation { continuation in
            fixture.manager.loadImage(with: url) { image, _, error, cacheType, finished, loaded in
                done.withLock {
                    $0.append("\(image?.width ?? 0) \(error == nil) \(cacheType) \(finished) \(loaded == url)")
                }
                continuation.resume()
            }
        }
        #expect(done.value == ["40 true memory true true"])
        await origin.stop()
    }

    @Test("refreshCached: cached first; 304 adds nothing; a changed image arrives second and replaces the entry")
    func refreshCached() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        origin.setRoute(
            "/r.png",
            OriginRoute(
                status: 200,
                headers: [("Content-Type", "image/png"), ("ETag", "\"v1\"")],
                body: ManagerImages.redPNG
            )
        )
        let url = origin.url("/r.png")
        _ = try await fixture.manager.loadImage(with: url)
        await fixture.settle()
        #expect(await fixture.cache.diskEntry(forKey: url.absoluteString)?.metadata.etag == "\"v1\"")

        // Not modified: one completion (the cached image), and the request was conditional.
        var events: [String] = []
        for try await event in fixture.manager.images(with: url, options: .refreshCached) {
            if case .image(let result) = event { events.append("\(result.cacheType)") }
        }
        #expect(events == ["memory"])
        #expect(origin.requests.last?.header("if-none-match") == "\"v1\"")
        #expect(origin.requestCount(for: "/r.png") == 2)

        // Changed: the cached image, then the new one, which replaces the cache entry.
        origin.setRoute(
            "/r.png",
            OriginRoute(
                status: 200,
                headers: [("Content-Type", "image/png"), ("ETag", "\"v2\"")],
                body: ManagerImages.bluePNG
            )
        )
        let colors = Locked<[String]>([])
        await withCheckedContinuation { continuation in
            fixture.manager.loadImage(with: url, options: .refreshCached) { image, _, _, cacheType, finished, _ in
                guard finished, let image else { return }
                let count = colors.withLock {
                    $0.append("\(cacheType):\(image.bitmap[0, 0].b == 255 ? "blue" : "red")")
                    return $0.count
                }
                if count == 2 { continuation.resume() }
            }
        }
        #expect(colors.value == ["memory:red", "none:blue"])
        let after = try await fixture.manager.loadImage(with: url)
        #expect(after.cacheType == .memory)
        #expect(after.image?.bitmap[0, 0].b == 255)
        await origin.stop()
    }

    @Test("Failed URLs are blacklisted (404, bad data), not for 500; retryFailed retries and clears")
    func blacklist() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        origin.setRoute("/bad.png", .data(Data("not an image".utf8), contentType: "image/png"))
        origin.setRoute("/busy.png", OriginRoute(status: 500, body: Data("busy".utf8)))
        let missing = origin.url("/missing.png")

        await #expect(throws: WebImageError.self) { try await fixture.manager.loadImage(with: missing) }
        do {
            _ = try await fixture.manager.loadImage(with: missing)
            Issue.record("a blacklisted URL loaded")
        } catch {
            #expect(error.code == .blackListed)
        }
        #expect(origin.requestCount(for: "/missing.png") == 1)
        #expect(fixture.manager.failedURLs.contains(missing))

        let bad = origin.url("/bad.png")
        do {
            _ = try await fixture.manager.loadImage(with: bad)
        } catch { #expect(error.code == .badImageData) }
        #expect(fixture.manager.failedURLs.contains(bad))

        let busy = origin.url("/busy.png")
        do {
            _ = try await fixture.manager.loadImage(with: busy)
        } catch { #expect(error.statusCode == 500) }
        #expect(!fixture.manager.failedURLs.contains(busy))

        // retryFailed goes to the network again; a success clears the entry.
        origin.setRoute("/missing.png", .data(ManagerImages.redPNG, contentType: "image/png"))
        let retried = try await fixture.manager.loadImage(with: missing, options: .retryFailed)
        #expect(retried.image?.width == 40)
        #expect(!fixture.manager.failedURLs.contains(missing))
        fixture.manager.removeAllFailedURLs()
        #expect(fixture.manager.failedURLs.isEmpty)
        await origin.stop()
    }

    @Test("Cancelling during the cache query and during the download: one cancelled completion each")
    func cancellation() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        let gate = OriginGate()
        origin.setRoute("/slow.png", .data(ManagerImages.redPNG, contentType: "image/png", behavior: .init(gate: gate)))
        let url = origin.url("/slow.png")

        let outcomes = Locked<[String]>([])
        let duringDownload = fixture.manager.loadImage(with: url) { _, _, error, _, finished, _ in
            outcomes.withLock { $0.append("download:\(error?.code.rawValue ?? "ok"):\(finished)") }
        }
        await DownloaderFixtures.wait { origin.requestCount(for: "/slow.png") == 1 }
        duringDownload.cancel()
        duringDownload.cancel()
        await DownloaderFixtures.wait { origin.abandonedResponses >= 1 || outcomes.value.count == 1 }

        // Park the cache's I/O queue so the disk query is still pending when cancelled.
        let parked = DispatchSemaphore(value: 0)
        fixture.cache.diskImageExists(withKey: "park") { _ in parked.wait() }
        let duringQuery = fixture.manager.loadImage(with: origin.url("/other.png")) { _, _, error, _, _, _ in
            outcomes.withLock { $0.append("query:\(error?.code.rawValue ?? "ok")") }
        }
        duringQuery.cancel()
        parked.signal()
        await fixture.settle()
        try await Task.sleep(for: .milliseconds(50))
        #expect(outcomes.value == ["download:cancelled:true", "query:cancelled"])
        #expect(origin.requestCount(for: "/other.png") == 0)
        #expect(!fixture.manager.isRunning)
        #expect(fixture.manager.failedURLs.isEmpty)
        gate.open()
        await origin.stop()
    }

    @Test("Transformed results are cached apart from originals; cacheMemoryOnly and fromCacheOnly")
    func keysAndStoreOptions() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        origin.setRoute("/t.png", .data(ManagerImages.redPNG, contentType: "image/png", cacheControl: "max-age=3600"))
        origin.setRoute("/m.png", .data(ManagerImages.bluePNG, contentType: "image/png", cacheControl: "max-age=3600"))
        let url = origin.url("/t.png")

        let context = ImageContext(transformer: ResizeTransformer(size: PixelSize(width: 10, height: 10), mode: .fill))
        let small = try await fixture.manager.loadImage(with: url, context: context)
        #expect(small.image?.width == 10 && small.image?.height == 10)
        let key = fixture.manager.cacheKey(for: url, context: context)
        #expect(key == ImageCacheKey(source: url.absoluteString, transformerKeys: ["Resize(fill,10x10)"]).rawValue)
        #expect(fixture.cache.imageFromMemoryCache(forKey: key)?.width == 10)
        #expect(fixture.cache.imageFromMemoryCache(forKey: url.absoluteString) == nil)
        let original = try await fixture.manager.loadImage(with: url)
        #expect(original.image?.width == 40)
        #expect(original.cacheType == .disk)  // the original bytes were kept on disk
        #expect(origin.requestCount(for: "/t.png") == 1)

        let memoryOnly = origin.url("/m.png")
        _ = try await fixture.manager.loadImage(with: memoryOnly, options: .cacheMemoryOnly)
        await fixture.settle()
        #expect(fixture.cache.imageFromMemoryCache(forKey: memoryOnly.absoluteString) != nil)
        #expect(!fixture.cache.diskImageDataExists(forKey: memoryOnly.absoluteString))

        do {
            _ = try await fixture.manager.loadImage(with: origin.url("/never.png"), options: .fromCacheOnly)
            Issue.record("fromCacheOnly loaded from the network")
        } catch {
            #expect(error.code == .cacheMiss)
        }
        #expect(origin.requestCount(for: "/never.png") == 0)
        // fromLoaderOnly skips the cache.
        let fresh = try await fixture.manager.loadImage(with: url, options: .fromLoaderOnly)
        #expect(fresh.cacheType == .none)
        #expect(origin.requestCount(for: "/t.png") == 2)
        await origin.stop()
    }

    @Test("Invalid URLs fail at once with invalidURL; file URLs load from disk")
    func urls() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        for url in [nil, URL(string: "ftp://example.com/a.png"), URL(string: "http://")] as [URL?] {
            do {
                _ = try await fixture.manager.loadImage(with: url)
                Issue.record("\(String(describing: url)) loaded")
            } catch {
                #expect(error.code == .invalidURL)
            }
        }
        let file = fixture.folder.file("local.png")
        try ManagerImages.redPNG.write(to: file)
        let local = try await fixture.manager.loadImage(with: file)
        #expect(local.image?.width == 40)
        #expect(try await fixture.manager.loadImage(with: file).cacheType == .memory)
        do {
            _ = try await fixture.manager.loadImage(with: fixture.folder.file("absent.png"))
            Issue.record("a missing file loaded")
        } catch {
            #expect(error.message.contains("absent.png"))
        }
    }

    @Test("Loaded, memory-hit, failed and cancelled loads release their operations")
    func operationsAreReleased() async throws {
        final class WeakOperation {
            weak var value: ImageLoadOperation?
            init(_ value: ImageLoadOperation) { self.value = value }
        }
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        origin.setRoute("/a.png", .data(ManagerImages.redPNG, contentType: "image/png"))
        origin.setRoute(
            "/slow.png",
            .data(ManagerImages.redPNG, contentType: "image/png", behavior: .init(delay: .seconds(5)))
        )
        let (finals, continuation) = AsyncStream.makeStream(of: WebImageError.Code?.self)
        var references: [WeakOperation] = []
        var codes: [WebImageError.Code?] = []
        var iterator = finals.makeAsyncIterator()
        for (path, cancels) in [("/a.png", false), ("/a.png", false), ("/missing.png", false), ("/slow.png", true)] {
            let operation = fixture.manager.loadImage(with: origin.url(path)) { _, _, error, _, finished, _ in
                if finished { continuation.yield(error?.code) }
            }
            references.append(WeakOperation(operation))
            if cancels { operation.cancel() }
            codes.append(await iterator.next() ?? nil)
        }
        #expect(codes == [nil, nil, .invalidDownloadStatusCode, .cancelled])
        let clock = ContinuousClock()
        let end = clock.now + .seconds(5)
        while references.contains(where: { $0.value != nil }) && clock.now < end {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(references.allSatisfy { $0.value == nil })
        await origin.stop()
    }

    @Test("A device (/dev/zero) is refused and a file over maximumDownloadSize fails from its size")
    func endlessFile() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        var configuration = ImageDownloader.Configuration()
        configuration.maximumDownloadSize = 1 << 20
        let manager = ImageManager(
            cache: CacheFixtures.cache(folder),
            loader: ImageDownloader(configuration: configuration)
        )
        // A device is not a file: refused before any read.
        let url = URL(fileURLWithPath: "/dev/zero")
        do {
            _ = try await manager.loadImage(with: url)
            Issue.record("/dev/zero loaded")
        } catch {
            #expect(error.code == .invalidURL)
            #expect(error.message.contains("/dev/zero") && error.message.contains("a device"))
        }
        // A file over the limit fails from its size, before it is read.
        let big = folder.file("big.png")
        #expect(FileManager.default.createFile(atPath: big.path, contents: nil))
        let handle = try FileHandle(forWritingTo: big)
        try handle.truncate(atOffset: 3 << 30)
        try handle.close()
        do {
            _ = try await manager.loadImage(with: big)
            Issue.record("a 3 GiB file loaded")
        } catch {
            #expect(error.code == .downloadTooLarge)
            #expect(error.message.contains("\(1 << 20)-byte limit"))
        }
        // The largest limit there is still reads a file (one byte past it must not overflow).
        configuration.maximumDownloadSize = .max
        let unbounded = ImageManager(
            cache: CacheFixtures.cache(folder),
            loader: ImageDownloader(configuration: configuration)
        )
        let file = folder.file("red.png")
        try ManagerImages.redPNG.write(to: file)
        #expect(try await unbounded.loadImage(with: file).image?.width == 40)
    }

    @Test("The event stream yields progress, progressive previews, then the image")
    func progressiveStream() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let jpeg = try JPEGCoder().encode(
            DecodedImage(bitmap: GeneratedImages.noise(width: 160, height: 120), format: .jpeg),
            as: .jpeg,
            options: .init(progressive: true)
        )
        let origin = try await OriginServer.start()
        let drip = DownloaderFixtures.HeldTail(jpeg, chunkSize: 1_500)
        origin.setRoute("/p.jpg", drip.route)
        var kinds: [String] = []
        var final: ImageLoadResult?
        for try await event in fixture.manager.images(
            with: origin.url("/p.jpg"),
            options: .progressiveLoad,
            context: drip.context
        ) {
            switch event {
            case .progress: if kinds.last != "progress" { kinds.append("progress") }
            case .info: kinds.append("info")
            case .partial(let image):
                #expect(image.isPartial)
                drip.releaseTail()
                if kinds.last != "partial" { kinds.append("partial") }
            case .image(let result):
                kinds.append("image")
                final = result
            }
        }
        #expect(kinds.first == "progress")
        #expect(kinds.contains("partial"))
        #expect(kinds.last == "image")
        #expect(final?.image?.isPartial == false)
        #expect(final?.cacheType == ImageCacheType.none)
        await origin.stop()
    }

    @Test("shouldCacheImage: a declined image is delivered and stored nowhere; an accepted one is cached")
    func shouldCacheImage() async throws {
        let origin = try await OriginServer.start()
        origin.setRoute("/keep.png", .data(ManagerImages.redPNG, contentType: "image/png"))
        origin.setRoute("/skip.png", .data(ManagerImages.bluePNG, contentType: "image/png"))
        let asked = Locked<[String]>([])
        var configuration = ImageManager.Configuration()
        configuration.shouldCacheImage = { image, url in
            asked.withLock { $0.append(url.path) }
            return image.bitmap[0, 0].r == 255  // red is kept, blue is not
        }
        let fixture = try ManagerFixture(configuration: configuration)
        defer { fixture.folder.remove() }
        for path in ["/keep.png", "/skip.png"] {
            let result = try await fixture.manager.loadImage(with: origin.url(path))
            #expect(result.image != nil && result.cacheType == .none, "\(path) delivered from the network")
        }
        await fixture.settle()
        #expect(asked.value.sorted() == ["/keep.png", "/skip.png"])
        let keepKey = fixture.manager.cacheKey(for: origin.url("/keep.png"))
        let skipKey = fixture.manager.cacheKey(for: origin.url("/skip.png"))
        #expect(fixture.cache.imageFromMemoryCache(forKey: keepKey) != nil)
        #expect(fixture.cache.diskImageData(forKey: keepKey) != nil)
        #expect(fixture.cache.imageFromMemoryCache(forKey: skipKey) == nil)
        #expect(fixture.cache.diskImageData(forKey: skipKey) == nil)
        // Loaded again: the kept one from memory, the declined one from the network.
        #expect(try await fixture.manager.loadImage(with: origin.url("/keep.png")).cacheType == .memory)
        #expect(try await fixture.manager.loadImage(with: origin.url("/skip.png")).cacheType == .none)
        #expect(origin.requestCount(for: "/keep.png") == 1 && origin.requestCount(for: "/skip.png") == 2)
        await fixture.settle()
        await origin.stop()
    }

    @Test("A load's own cache key filter wins over the manager's: two query strings share one entry")
    func perLoadCacheKeyFilter() async throws {
        let origin = try await OriginServer.start()
        origin.setRoute("/k.png", .data(ManagerImages.redPNG, contentType: "image/png"))
        var configuration = ImageManager.Configuration()
        configuration.cacheKeyFilter = { "manager:" + $0.absoluteString }
        let fixture = try ManagerFixture(configuration: configuration)
        defer { fixture.folder.remove() }
        var context = ImageContext()
        context.cacheKeyFilter = { "load:" + $0.path }
        let signed = origin.url("/k.png?signature=1")
        let resigned = origin.url("/k.png?signature=2")
        #expect(fixture.manager.cacheKey(for: signed, context: context) == "load:/k.png")
        #expect(fixture.manager.cacheKey(for: signed) == "manager:" + signed.absoluteString)
        let first = try await fixture.manager.loadImage(with: signed, context: context)
        let second = try await fixture.manager.loadImage(with: resigned, context: context)
        #expect(first.cacheType == .none && second.cacheType == .memory, "the second URL found the first's entry")
        #expect(origin.requestCount(for: "/k.png") == 1)
        #expect(fixture.cache.imageFromMemoryCache(forKey: "load:/k.png") != nil)
        // Without the context, the manager's filter: another key, so another download.
        let third = try await fixture.manager.loadImage(with: resigned)
        #expect(third.cacheType == .none)
        #expect(origin.requestCount(for: "/k.png") == 2)
        await fixture.settle()
        await origin.stop()
    }

    @Test("Hooks: cache key filter, should-download, transform before caching, cache serializer, saveImageToCache")
    func hooks() async throws {
        let origin = try await OriginServer.start()
        origin.setRoute("/h.png", .data(ManagerImages.redPNG, contentType: "image/png"))
        let url = origin.url("/h.png")
        let downloads = Locked(false)
        var configuration = ImageManager.Configuration()
        configuration.cacheKeyFilter = { $0.path }
        configuration.shouldDownloadImage = { _ in downloads.value }
        // The downloaded image is turned blue before caching; the serializer decides the disk bytes.
        configuration.transformDownloadedImage = { _, _ in ManagerImages.blue }
        configuration.cacheSerializer = { _, _, _ in Data("custom bytes".utf8) }
        let fixture = try ManagerFixture(configuration: configuration)
        defer { fixture.folder.remove() }
        #expect(fixture.manager.cacheKey(for: url) == "/h.png")

        do {
            _ = try await fixture.manager.loadImage(with: url)
            Issue.record("a declined download loaded")
        } catch {
            #expect(error.code == .cacheMiss)
        }
        #expect(origin.requestCount(for: "/h.png") == 0)

        downloads.withLock { $0 = true }
        let result = try await fixture.manager.loadImage(with: url)
        #expect(result.image?.bitmap[0, 0].b == 255)
        await fixture.settle()
        #expect(fixture.cache.imageFromMemoryCache(forKey: "/h.png")?.bitmap[0, 0].b == 255)
        #expect(fixture.cache.diskImageData(forKey: "/h.png") == Data("custom bytes".utf8))

        try await fixture.manager.saveImageToCache(ManagerImages.red, for: URL(string: "https://example.com/saved.png"))
        #expect(fixture.cache.imageFromMemoryCache(forKey: "/saved.png") != nil)
        #expect(await fixture.manager.diskImageExists(for: URL(string: "https://example.com/saved.png")))
        await origin.stop()
    }

    @Test("The deprecated hook properties still change the manager's configuration")
    func deprecatedHooks() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        origin.setRoute("/h.png", .data(ManagerImages.redPNG, contentType: "image/png"))
        let url = origin.url("/h.png")
        let legacy: any LegacyManagerHooks = fixture.manager
        legacy.setLegacyHooks(keyFilter: { $0.path }, shouldDownload: { _ in false })
        #expect(fixture.manager.cacheKey(for: url) == "/h.png")
        #expect(fixture.manager.configuration.cacheKeyFilter != nil)
        do {
            _ = try await fixture.manager.loadImage(with: url)
            Issue.record("a declined download loaded")
        } catch {
            #expect(error.code == .cacheMiss)
        }
        legacy.setLegacyHooks(keyFilter: nil, shouldDownload: nil)
        #expect(fixture.manager.cacheKey(for: url) == url.absoluteString)
        #expect(try await fixture.manager.loadImage(with: url).cacheType == .none)
        await origin.stop()
    }

    @Test("A delegate answers what the configuration's closures leave open")
    func delegate() async throws {
        final class Recorder: ImageManagerDelegate {
            let asked = Locked<[String]>([])
            func imageManager(_ manager: ImageManager, shouldDownloadImageFor url: URL) -> Bool {
                asked.withLock { $0.append("download \(url.lastPathComponent)") }
                return url.lastPathComponent != "no.png"
            }
            func imageManager(_ manager: ImageManager, shouldBlockFailedURL url: URL, error: WebImageError) -> Bool? {
                asked.withLock { $0.append("block \(url.lastPathComponent)") }
                return false
            }
        }
        let recorder = Recorder()
        var configuration = ImageManager.Configuration()
        configuration.delegate = recorder
        let fixture = try ManagerFixture(configuration: configuration)
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        origin.setRoute("/gone.png", OriginRoute(status: 404))
        await #expect(throws: WebImageError.self) { try await fixture.manager.loadImage(with: origin.url("/no.png")) }
        await #expect(throws: WebImageError.self) { try await fixture.manager.loadImage(with: origin.url("/gone.png")) }
        #expect(recorder.asked.value == ["download no.png", "download gone.png", "block gone.png"])
        #expect(fixture.manager.failedURLs.isEmpty, "the delegate said a 404 is not for good")
        #expect(origin.requests.map(\.path) == ["/gone.png"])
        await origin.stop()
    }

    @Test("The configuration's decode and transform queues serve loads whose context names none")
    func configurationQueues() async throws {
        let decodes = ImageWorkQueue(width: 1, name: "test-decode")
        let transforms = ImageWorkQueue(width: 1, name: "test-transform")
        var configuration = ImageManager.Configuration()
        configuration.decodeQueue = decodes
        configuration.transformQueue = transforms
        let fixture = try ManagerFixture(configuration: configuration)
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        for index in 0..<4 { origin.setRoute("/\(index).png", .data(ManagerImages.redPNG, contentType: "image/png")) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<4 {
                group.addTask {
                    let request = ImageRequest(url: origin.url("/\(index).png"), transformers: [.resize(width: 20)])
                    let result = try await fixture.manager.loadImage(with: request)
                    #expect(result.image?.width == 20)
                }
            }
            try await group.waitForAll()
        }
        #expect(decodes.peakRunningCount == 1, "every decode ran on the configured queue, one at a time")
        #expect(transforms.peakRunningCount == 1)
        // A context naming its own queue keeps it.
        let own = ImageWorkQueue(width: 2, name: "test-own")
        var context = ImageContext()
        context.decodeQueue = own
        origin.setRoute("/own.png", .data(ManagerImages.bluePNG, contentType: "image/png"))
        let blue = try await fixture.manager.loadImage(
            with: ImageRequest(url: origin.url("/own.png"), context: context)
        )
        #expect(blue.image?.width == 40)
        #expect(own.peakRunningCount == 1, "the context's own queue decoded it")
        await origin.stop()
    }

    @Test("Completions run on the callback queue when one is set")
    func callbackQueue() async throws {
        let queue = DispatchQueue(label: "test.callbacks")
        let key = DispatchSpecificKey<Int>()
        queue.setSpecific(key: key, value: 7)
        var configuration = ImageManager.Configuration()
        configuration.callbackQueue = queue
        let fixture = try ManagerFixture(configuration: configuration)
        defer { fixture.folder.remove() }
        try await fixture.cache.store(ManagerImages.red, data: nil, forKey: "https://example.com/q.png")
        let onQueue = await withCheckedContinuation { continuation in
            fixture.manager.loadImage(with: URL(string: "https://example.com/q.png")) { _, _, _, _, _, _ in
                continuation.resume(returning: DispatchQueue.getSpecific(key: key) == 7)
            }
        }
        #expect(onQueue)
    }
}
