import Foundation
import Testing
import WebImage
import WebImageOrigin
import WebImageTestSupport

/// The `URL` (not `URL?`) entry points, each against a real origin: they load what their
/// optional twins load, and a URL the loader cannot fetch still fails with `invalidURL`.
@Suite("Non-optional URL entry points", .timeLimit(.minutes(1)))
struct NonOptionalURLTests {
    /// Runs `body` with a started origin serving `/a.png` … `/e.png`, and stops it on every path.
    static func withOrigin(_ body: (OriginServer) async throws -> Void) async throws {
        let origin = try await OriginServer.start()
        for name in ["a", "b", "c", "d", "e"] {
            origin.setRoute("/\(name).png", .data(ManagerImages.redPNG, contentType: "image/png"))
        }
        do {
            try await body(origin)
        } catch {
            await origin.stop()
            throw error
        }
        await origin.stop()
    }

    @Test("ImageManager: async, completion, stream and cache queries take a URL")
    func manager() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        try await Self.withOrigin { origin in
            let a: URL = origin.url("/a.png")
            #expect(try await fixture.manager.loadImage(with: a).image?.width == 40)
            #expect(await fixture.manager.cachedImageExists(for: a) != .none)
            await fixture.settle()
            #expect(await fixture.manager.diskImageExists(for: a))

            let completed = await withCheckedContinuation { continuation in
                fixture.manager.loadImage(with: origin.url("/b.png")) { image, _, error, _, finished, url in
                    if finished { continuation.resume(returning: (image?.width, error, url)) }
                }
            }
            #expect(completed.0 == 40 && completed.1 == nil && completed.2 == origin.url("/b.png"))

            var finalWidth: Int?
            for try await event in fixture.manager.images(with: origin.url("/c.png")) {
                if case .image(let result) = event { finalWidth = result.image?.width }
            }
            #expect(finalWidth == 40)

            let saved = origin.url("/never-requested.png")
            let image = try #require(try await fixture.manager.loadImage(with: a).image)
            try await fixture.manager.saveImageToCache(image, for: saved)
            #expect(await fixture.manager.cachedImageExists(for: saved) != .none)
            #expect(try await fixture.manager.loadImage(with: saved).cacheType == .memory)
            #expect(origin.requestCount(for: "/never-requested.png") == 0)
        }
    }

    @Test("ImageDownloader, ImagePrefetcher and ImageTarget take a URL; an ftp URL is still invalidURL")
    func downloaderPrefetcherTarget() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        try await Self.withOrigin { origin in
            let downloaded = try await fixture.downloader.image(with: origin.url("/a.png"))
            #expect(downloaded.image?.width == 40 && !downloaded.data.isEmpty)

            var finished = false
            for try await event in fixture.downloader.events(with: origin.url("/b.png")) {
                if case .finished = event { finished = true }
            }
            #expect(finished)

            let ftp = try #require(URL(string: "ftp://127.0.0.1/a.png"))
            let refusal = await withCheckedContinuation { continuation in
                let token = fixture.downloader.download(with: ftp) { _, _, error, done in
                    if done { continuation.resume(returning: error?.code) }
                }
                #expect(token == nil)
            }
            #expect(refusal == .invalidURL)

            let urls: [URL] = [origin.url("/c.png"), origin.url("/d.png")]
            let counts = await ImagePrefetcher(manager: fixture.manager).prefetch(urls)
            #expect(counts.finished == 2 && counts.failed == 0)

            let target = RecordingTarget()
            let shown = await withCheckedContinuation { continuation in
                target.setImage(
                    with: origin.url("/e.png"),
                    manager: fixture.manager,
                    completed: { image, _, _, _, done, _ in
                        if done { continuation.resume(returning: image != nil) }
                    }
                )
            }
            #expect(shown && target.shown.withLock { $0 } == ["nil", "red"])
        }
    }
}
