import Foundation
import Testing
import WebImage
import WebImageOrigin
import WebImageTestSupport

/// Paths of the manager, downloader and prefetcher that SDWebImage users rely on.
@Suite(
    "Manager paths: cancelAll, decodesImages, transformAnimatedImage, scaleDownLargeImages, cancelPrefetching",
    .timeLimit(.minutes(1))
)
struct ManagerPathsTests {
    @Test("cancelAll cancels every running load; each caller hears cancelled once and nothing is cached")
    func cancelAll() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        let gate = OriginGate()
        for path in ["/a.png", "/b.png"] {
            origin.setRoute(path, .data(ManagerImages.redPNG, contentType: "image/png", behavior: .init(gate: gate)))
        }
        let outcomes = Locked<[String]>([])
        for path in ["/a.png", "/b.png", "/a.png"] {
            fixture.manager.loadImage(with: origin.url(path)) { image, _, error, _, finished, url in
                guard finished else { return }
                outcomes.withLock { $0.append("\(url?.path ?? "") \(error?.code.rawValue ?? "ok")") }
            }
        }
        await DownloaderFixtures.wait {
            origin.requestCount(for: "/a.png") == 1 && origin.requestCount(for: "/b.png") == 1
        }
        #expect(fixture.manager.isRunning)
        fixture.manager.cancelAll()
        await DownloaderFixtures.wait { outcomes.value.count == 3 }
        gate.open()
        #expect(outcomes.value.sorted() == ["/a.png cancelled", "/a.png cancelled", "/b.png cancelled"])
        await DownloaderFixtures.wait { !fixture.manager.isRunning }
        #expect(!fixture.manager.isRunning)
        await fixture.settle()
        #expect(await fixture.manager.cachedImageExists(for: origin.url("/a.png")) == .none)
        await origin.stop()
    }

    @Test("decodesImages = false: the downloader delivers the bytes and no image")
    func bytesOnly() async throws {
        let origin = try await OriginServer.start()
        origin.setRoute("/a.png", .data(ManagerImages.redPNG, contentType: "image/png"))
        var configuration = ImageDownloader.Configuration()
        configuration.decodesImages = false
        let downloader = ImageDownloader(configuration: configuration)
        let result = try await downloader.image(with: origin.url("/a.png"), options: .progressiveLoad)
        #expect(result.image == nil && result.data == ManagerImages.redPNG)
        let decoding = DownloaderFixtures.downloader()
        #expect(try await decoding.image(with: origin.url("/a.png")).image != nil, "the control decodes")
        await origin.stop()
    }

    @Test("A transformer leaves an animation alone unless transformAnimatedImage; then every frame is transformed")
    func transformAnimatedImage() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        let gif = GIFBuilder.checkerAnimation(width: 64, height: 48, frames: 3)
        // Two URLs: a load's image is cached under the transformer's key whether or not it was
        // transformed (as in SDWebImage), so one URL would answer the second load from memory.
        for path in ["/anim.gif", "/anim2.gif"] { origin.setRoute(path, .data(gif, contentType: "image/gif")) }
        var context = ImageContext()
        context.transformer = ResizeTransformer(size: PixelSize(width: 32, height: 24), mode: .exact)
        let untouched = try await fixture.manager.loadImage(with: origin.url("/anim.gif"), context: context)
        #expect(untouched.image?.width == 64 && untouched.image?.frames.count == 3)
        let transformed = try await fixture.manager.loadImage(
            with: origin.url("/anim2.gif"),
            options: .transformAnimatedImage,
            context: context
        )
        let image = try #require(transformed.image)
        #expect(image.frames.count == 3)
        #expect(
            image.frames.allSatisfy { $0.bitmap.width == 32 && $0.bitmap.height == 24 },
            "\(image.width)×\(image.height): \(image.frames.map { "\($0.bitmap.width)×\($0.bitmap.height)" })"
        )
        await origin.stop()
    }

    @Test("scaleDownLargeImages through the manager: a frame over the limit is decoded smaller, within the limit")
    func scaleDownLargeImages() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        let png = try PNGCoder().encode(
            DecodedImage(bitmap: GeneratedImages.gradient(width: 1200, height: 800), format: .png),
            as: .png,
            options: .init()
        )
        // Two URLs: the option changes the decode, not the cache key (as in SDWebImage).
        for path in ["/large.png", "/large2.png"] { origin.setRoute(path, .data(png, contentType: "image/png")) }
        var context = ImageContext()
        context.scaleDownLimitBytes = 1_000_000
        let full = try await fixture.manager.loadImage(with: origin.url("/large.png"), context: context)
        #expect(full.image?.width == 1200, "without the option the limit does nothing")
        let scaled = try await fixture.manager.loadImage(
            with: origin.url("/large2.png"),
            options: .scaleDownLargeImages,
            context: context
        )
        let image = try #require(scaled.image)
        #expect(image.bitmap.byteCount <= 1_000_000 && image.width < 1200, "\(image.width)×\(image.height)")
        let aspect = Double(image.width) / Double(image.height)
        #expect(abs(aspect - 1.5) < 0.02, "\(image.width)×\(image.height)")
        await origin.stop()
    }

    @Test(
        "cancelPrefetching stops every prefetch: each token ends with the counts so far, and nothing more is requested"
    )
    func cancelPrefetching() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        let gate = OriginGate()
        for index in 0..<6 {
            origin.setRoute(
                "/p\(index).png",
                .data(ManagerImages.redPNG, contentType: "image/png", behavior: .init(gate: gate))
            )
        }
        let prefetcher = ImagePrefetcher(manager: fixture.manager)
        prefetcher.maxConcurrentPrefetchCount = 1
        let ends = Locked<[ImagePrefetcher.Progress]>([])
        let first = prefetcher.prefetchURLs((0..<3).map { origin.url("/p\($0).png") })
        let second = prefetcher.prefetchURLs((3..<6).map { origin.url("/p\($0).png") })
        for token in [first, second] { token.onEnd { progress in ends.withLock { $0.append(progress) } } }
        await DownloaderFixtures.wait {
            origin.requestCount(for: "/p0.png") == 1 && origin.requestCount(for: "/p3.png") == 1
        }
        prefetcher.cancelPrefetching()
        await DownloaderFixtures.wait { ends.value.count == 2 }
        gate.open()
        #expect(ends.value.count == 2 && ends.value.allSatisfy { $0.total == 3 && $0.finished == 0 })
        await DownloaderFixtures.wait { !fixture.manager.isRunning }
        try await Task.sleep(for: .milliseconds(200))  // time for a wrongly started URL to show
        #expect((0..<6).map { origin.requestCount(for: "/p\($0).png") } == [1, 0, 0, 1, 0, 0])
        #expect(!fixture.manager.isRunning, "the running loads were cancelled")
        #expect([first, second].allSatisfy { $0.counts.finished == 0 }, "cancelled loads are not counted later")
        await origin.stop()
    }
}
