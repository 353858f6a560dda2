import Foundation
import Testing
import WebImage
import WebImageCoders
import WebImageOrigin
import WebImageTestSupport

@Suite("Thumbnails and transformed images from the stored original", .timeLimit(.minutes(1)))
struct DerivedImageTests {
    static let photo = DecodedImage(bitmap: GeneratedImages.noise(width: 320, height: 240), format: .jpeg)
    static let photoJPEG = try! JPEGCoder().encode(photo, as: .jpeg, options: .init())

    @Test("Other thumbnail sizes and transformers of a cached original make no request")
    func noRequestForDerivedImages() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        origin.setRoute("/p.jpg", .data(Self.photoJPEG, contentType: "image/jpeg", cacheControl: "max-age=3600"))
        let url = origin.url("/p.jpg")
        _ = try await fixture.manager.loadImage(with: url)
        await fixture.settle()

        let contexts = [
            ImageContext(thumbnailPixelSize: PixelSize(width: 64, height: 64)),
            ImageContext(thumbnailPixelSize: PixelSize(width: 100, height: 100)),
            ImageContext(transformer: ResizeTransformer(size: PixelSize(width: 10, height: 10), mode: .fill)),
        ]
        for context in contexts {
            let result = try await fixture.manager.loadImage(with: url, context: context)
            #expect(result.cacheType == .disk, "made from the original's disk entry")
            #expect(result.data == Self.photoJPEG, "the data is the original's, as for a download")
        }
        let sizes = try await contexts.asyncMap { try await fixture.manager.loadImage(with: url, context: $0) }
        #expect(sizes.map(\.cacheType) == [.memory, .memory, .memory])
        #expect(sizes.compactMap { $0.image.map { [$0.width, $0.height] } } == [[64, 48], [100, 75], [10, 10]])
        #expect(origin.requestCount(for: "/p.jpg") == 1)
        // refreshCached asks the network; a missing original is downloaded.
        let thumbnail = ImageContext(thumbnailPixelSize: PixelSize(width: 32, height: 32))
        _ = try await fixture.manager.loadImage(with: url, options: .refreshCached, context: thumbnail)
        #expect(origin.requestCount(for: "/p.jpg") == 2)
        await origin.stop()
    }

    @Test("A thumbnail's disk entry holds the thumbnail's bytes; the original is stored beside it")
    func thumbnailEntryIsTheThumbnail() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        origin.setRoute(
            "/p.jpg",
            OriginRoute(
                headers: [("Content-Type", "image/jpeg"), ("ETag", "\"v1\""), ("Cache-Control", "max-age=3600")],
                body: Self.photoJPEG
            )
        )
        let url = origin.url("/p.jpg")
        let context = ImageContext(thumbnailPixelSize: PixelSize(width: 64, height: 64))
        let loaded = try await fixture.manager.loadImage(with: url, context: context)
        #expect(loaded.cacheType == .none)
        #expect(loaded.image.map { [$0.width, $0.height] } == [64, 48])
        await fixture.settle()

        let key = fixture.manager.cacheKey(for: url, context: context)
        let stored = try #require(fixture.cache.diskImageData(forKey: key))
        let header = try #require(ImageHeader(stored))
        #expect(header.format == .jpeg)
        #expect(header.size == PixelSize(width: 64, height: 48))
        #expect(stored.count < Self.photoJPEG.count / 4)
        #expect(fixture.cache.diskImageData(forKey: url.absoluteString) == Self.photoJPEG)
        #expect(await fixture.cache.diskEntry(forKey: url.absoluteString)?.metadata.etag == "\"v1\"")

        // A fresh process (an empty memory cache): the thumbnail comes from its own entry.
        let reopened = ImageManager(cache: CacheFixtures.cache(fixture.folder), loader: fixture.downloader)
        let hit = try await reopened.loadImage(with: url, context: context)
        #expect(hit.cacheType == .disk)
        #expect(hit.data == stored)
        #expect(hit.image.map { [$0.width, $0.height] } == [64, 48])
        #expect(origin.requestCount(for: "/p.jpg") == 1)
        await origin.stop()
    }

    @Test("A thumbnail no smaller than the original stores the original's bytes once")
    func smallOriginalIsNotReencoded() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        origin.setRoute("/p.jpg", .data(Self.photoJPEG, contentType: "image/jpeg", cacheControl: "max-age=3600"))
        let url = origin.url("/p.jpg")
        let context = ImageContext(thumbnailPixelSize: PixelSize(width: 1000, height: 1000))
        let loaded = try await fixture.manager.loadImage(with: url, context: context)
        #expect(loaded.image?.width == 320)
        await fixture.settle()
        let key = fixture.manager.cacheKey(for: url, context: context)
        #expect(fixture.cache.diskImageData(forKey: key) == Self.photoJPEG, "not re-encoded (no generation loss)")
        await origin.stop()
    }

    @Test("A file:// thumbnail stores the thumbnail only: the file is the original")
    func fileOriginalsAreNotCopied() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let file = fixture.folder.url.appendingPathComponent("p.jpg")
        try Self.photoJPEG.write(to: file)
        let context = ImageContext(thumbnailPixelSize: PixelSize(width: 64, height: 64))
        let loaded = try await fixture.manager.loadImage(with: file, context: context)
        #expect(loaded.image?.width == 64)
        await fixture.settle()
        #expect(!fixture.cache.diskImageDataExists(forKey: file.absoluteString))
        let key = fixture.manager.cacheKey(for: file, context: context)
        #expect(fixture.cache.diskImageData(forKey: key).flatMap(ImageHeader.init)?.size.width == 64)
    }
}

extension Array where Element: Sendable {
    /// `transform` applied to each element in order, awaiting each.
    fileprivate func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var results: [T] = []
        for element in self { results.append(try await transform(element)) }
        return results
    }
}
