import Foundation
import Testing
import WebImage
@_spi(WebImageInternals) import WebImageCoders
import WebImageTestSupport

@Suite("Loaders: the file loader and custom loaders", .timeLimit(.minutes(1)))
struct LoaderTests {
    /// A photo in a folder of its own, and a read queue whose one place is held until `release`
    /// is signalled.
    static func heldReads() throws -> (TemporaryDirectory, URL, ImageWorkQueue, DispatchSemaphore) {
        let folder = try TemporaryDirectory()
        let file = folder.url.appendingPathComponent("photo.jpg")
        try DerivedImageTests.photoJPEG.write(to: file)
        let readQueue = ImageWorkQueue(width: 1)
        let release = DispatchSemaphore(value: 0)
        readQueue.enqueue { release.wait() }
        return (folder, file, readQueue, release)
    }

    @Test("Twenty loads of one file at once: one read, one decode, every caller gets the image")
    func fileLoadsCoalesce() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let file = fixture.folder.url.appendingPathComponent("photo.jpg")
        try DerivedImageTests.photoJPEG.write(to: file)
        let fileLoader = try #require(fixture.manager.loaders.lazy.compactMap { $0 as? FileImageLoader }.first)
        let sizes = try await withThrowingTaskGroup(of: Int?.self) { group in
            for _ in 0..<20 { group.addTask { try await fixture.manager.loadImage(with: file).image?.width } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(sizes == Array(repeating: 320, count: 20))
        #expect(fileLoader.readCount == 1)
        // The load leaves the table right after its last completion returns.
        await DownloaderFixtures.wait { fileLoader.currentLoadCount == 0 }
        #expect(fileLoader.currentLoadCount == 0)
    }

    @Test("Cancelling one caller of a file load: the others get the image, it gets cancelled")
    func fileLoadCancellation() async throws {
        // One read place, held: every caller asks before a read starts.
        let (folder, file, readQueue, release) = try Self.heldReads()
        defer { folder.remove() }
        let loader = FileImageLoader(readQueue: readQueue)
        let outcomes = Locked<[String]>([])
        let record: @Sendable (String) -> ImageLoaderCompletion = { name in
            { image, _, error, finished, metadata in
                guard finished else { return }
                let outcome = error?.code.rawValue ?? "\(image?.width ?? 0) \(metadata?.contentType ?? "")"
                outcomes.withLock { $0.append("\(name): \(outcome)") }
            }
        }
        let first = loader.requestImage(
            with: file,
            options: [],
            context: ImageContext(),
            progress: nil,
            completed: record("first")
        )
        _ = loader.requestImage(
            with: file,
            options: [],
            context: ImageContext(),
            progress: nil,
            completed: record("second")
        )
        #expect(loader.currentLoadCount == 1)
        first?.cancel()
        #expect(outcomes.value == ["first: cancelled"])
        release.signal()
        await DownloaderFixtures.wait { outcomes.value.count == 2 }
        #expect(outcomes.value == ["first: cancelled", "second: 320 image/jpeg"])
        #expect(loader.readCount == 1)
    }

    @Test("Two thumbnail sizes of one file at once: each caller gets its own size")
    func fileLoadSizes() async throws {
        // One read place, held: every caller asks before a read starts.
        let (folder, file, readQueue, release) = try Self.heldReads()
        defer { folder.remove() }
        let loader = FileImageLoader(readQueue: readQueue)
        let widths = Locked<[Int: Int]>([:])
        for side in [40, 100] {
            var context = ImageContext()
            context.thumbnailPixelSize = PixelSize(width: side, height: side)
            _ = loader.requestImage(with: file, options: [], context: context, progress: nil) {
                image,
                _,
                _,
                finished,
                _ in
                if finished { widths.withLock { $0[side] = image?.width ?? 0 } }
            }
        }
        release.signal()
        await DownloaderFixtures.wait { widths.value.count == 2 }
        #expect(widths.value == [40: 40, 100: 100])
    }

    @Test("A load whose every caller cancelled before its turn reads nothing")
    func abandonedFileLoad() async throws {
        // One read place, held: every caller asks before a read starts.
        let (folder, file, readQueue, release) = try Self.heldReads()
        defer { folder.remove() }
        let loader = FileImageLoader(readQueue: readQueue)
        let token = loader.requestImage(with: file, options: [], context: ImageContext(), progress: nil) {
            _,
            _,
            _,
            _,
            _ in
        }
        token?.cancel()
        #expect(loader.currentLoadCount == 0)
        release.signal()
        await DownloaderFixtures.wait { readQueue.runningCount == 0 && readQueue.waitingCount == 0 }
        #expect(loader.readCount == 0)
    }

    @Test("Files past maximumFilesInMemory wait to be read until a decode ends, the highest priority first")
    func fileReadsWaitForDecodes() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        var files: [String: URL] = [:]
        for name in ["a", "b", "c"] {
            files[name] = folder.url.appendingPathComponent("\(name).jpg")
            try DerivedImageTests.photoJPEG.write(to: files[name]!)
        }
        // One decode place, held: the first file is read and waits there.
        let decodeQueue = ImageWorkQueue(width: 1)
        let release = DispatchSemaphore(value: 0)
        decodeQueue.enqueue { release.wait() }
        var context = ImageContext()
        context.decodeQueue = decodeQueue
        let loader = FileImageLoader(readQueue: ImageWorkQueue(width: 2), maximumFilesInMemory: 1)
        #expect(loader.maximumFilesInMemory == 1)
        let finished = Locked<[String]>([])
        func request(_ name: String, _ options: ImageOptions) {
            _ = loader.requestImage(with: files[name]!, options: options, context: context, progress: nil) {
                image,
                _,
                _,
                done,
                _ in
                if done { finished.withLock { $0.append("\(name) \(image?.width ?? 0)") } }
            }
        }
        request("a", [])
        await DownloaderFixtures.wait { loader.readCount == 1 }
        request("b", .lowPriority)
        request("c", .highPriority)
        // Neither is read while the first file waits for its decode.
        try await Task.sleep(for: .milliseconds(300))
        #expect(loader.readCount == 1)
        #expect(loader.filesInMemoryCount == 1)
        #expect(loader.currentLoadCount == 3)
        release.signal()
        await DownloaderFixtures.wait { finished.value.count == 3 }
        #expect(finished.value == ["a 320", "c 320", "b 320"])
        #expect(loader.readCount == 3)
        #expect(loader.filesInMemoryCount == 0)
    }

    @Test("A custom loader takes its own scheme; the manager caches what it loads and remembers failures it blocks")
    func customLoader() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let loader = PaletteLoader()
        let manager = ImageManager(cache: fixture.cache, loader: fixture.downloader, additionalLoaders: [loader])
        let url = try #require(URL(string: "palette://red"))
        let first = try await manager.loadImage(with: url)
        #expect(first.cacheType == .none)
        #expect(first.image?.width == 40)
        let second = try await manager.loadImage(with: url)
        #expect(second.cacheType == .memory)
        #expect(loader.requests.value == ["palette://red"])
        await #expect(throws: WebImageError.self) { try await manager.loadImage(with: URL(string: "palette://none")!) }
        #expect(manager.failedURLs == [URL(string: "palette://none")!])
        await #expect(throws: WebImageError.self) { try await manager.loadImage(with: URL(string: "other://x")!) }
        await fixture.settle()
        #expect(await fixture.cache.diskEntry(forKey: "palette://red") != nil)
    }

    @Test("A loader that keeps its images off disk: in memory only, whatever the load's store type")
    func loaderKeepsOffDisk() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let loader = PaletteLoader(storesOnDisk: false)
        let manager = ImageManager(cache: fixture.cache, loader: fixture.downloader, additionalLoaders: [loader])
        let url = try #require(URL(string: "palette://red"))
        #expect(try await manager.loadImage(with: url, options: .waitStoreCache).image?.width == 40)
        await fixture.settle()
        #expect(await fixture.cache.diskEntry(forKey: "palette://red") == nil)
        #expect(try await manager.loadImage(with: url).cacheType == .memory)
        #expect(loader.requests.value == ["palette://red"])
    }
}

/// Serves `palette://red` as a 40×30 PNG; anything else is a lasting failure.
private final class PaletteLoader: ImageLoading {
    let requests = Locked<[String]>([])
    let keepsOnDisk: Bool

    init(storesOnDisk: Bool = true) { keepsOnDisk = storesOnDisk }

    func storesOnDisk(_ url: URL) -> Bool { keepsOnDisk }

    func canRequestImage(for url: URL) -> Bool { url.scheme == "palette" }

    func requestImage(
        with url: URL,
        options: ImageOptions,
        context: ImageContext,
        progress: ImageDownloader.ProgressHandler?,
        completed: @escaping ImageLoaderCompletion
    ) -> (any ImageLoadingToken)? {
        requests.withLock { $0.append(url.absoluteString) }
        DispatchQueue.global().async {
            if url.host == "red" {
                let metadata = DiskCacheMetadata(contentType: "image/png")
                completed(ManagerImages.red, ManagerImages.redPNG, nil, true, metadata)
            } else {
                let failure = WebImageError(.badImageData, url: url, message: "\(url): no such colour")
                completed(nil, nil, failure, true, nil)
            }
        }
        return nil
    }

    func shouldBlockFailedURL(_ url: URL, error: WebImageError) -> Bool { true }
}
