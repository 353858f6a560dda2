import Foundation
import Testing
import WebImage
import WebImageCoders
import WebImageOrigin
import WebImageTestSupport

#if canImport(Glibc)
import Glibc
import WebImageHTTP
#endif

/// What a hostile or odd origin must not do to a load: trap on a port, cache a redirect's body,
/// make us read a huge error page, time out a steady download, or get a format we cannot decode.
@Suite("Download reliability", .timeLimit(.minutes(3)))
struct DownloadReliabilityTests {
    @Test("A port over 65535 is invalidURL at the downloader and the manager, never a trap")
    func badPort() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let url = try #require(URL(string: "http://127.0.0.1:70000/a.png"))
        let downloaderError = await ResponseTests.failure(DownloaderFixtures.downloader(), url)
        #expect(downloaderError?.code == .invalidURL)
        #expect(downloaderError?.message.contains("port 70000") == true)
        let manager = ImageManager(cache: CacheFixtures.cache(folder), loader: DownloaderFixtures.downloader())
        for text in ["http://127.0.0.1:70000/a.png", "http://127.0.0.1:123456789012345678901234/a.png"] {
            do {
                _ = try await manager.loadImage(with: URL(string: text))
                Issue.record("\(text) loaded")
            } catch {
                #expect(error.code == .invalidURL, "\(text)")
                #expect(error.message.contains("port"), "\(error.message)")
            }
        }
    }

    @Test("Unfollowed redirects (file:// target, 300) are errors naming the target; nothing is cached")
    func unfollowedRedirects() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let origin = try await OriginServer.start()
        origin.setRoute(
            "/file.png",
            OriginRoute(status: 302, headers: [("Location", "file:///etc/passwd")], body: DownloaderFixtures.png)
        )
        origin.setRoute("/choices.png", OriginRoute(status: 300, body: DownloaderFixtures.png))
        let cache = CacheFixtures.cache(folder)
        let manager = ImageManager(cache: cache, loader: DownloaderFixtures.downloader())
        for (path, words) in [("/file.png", "file:///etc/passwd"), ("/choices.png", "300")] {
            do {
                _ = try await manager.loadImage(with: origin.url(path))
                Issue.record("\(path) loaded")
            } catch {
                #expect(error.message.contains(words), "\(error.message)")
            }
        }
        await cache.flush()
        #expect(cache.diskCache.count == 0)
        #expect(cache.imageFromMemoryCache(forKey: origin.url("/choices.png").absoluteString) == nil)
        await origin.stop()
    }

    @Test("An error status ends the transfer at the head: a large slow error page is not read")
    func errorStatusStopsAtHead() async throws {
        let origin = try await OriginServer.start()
        // 4 MiB in 64 KiB chunks 50 ms apart: reading it all would take over 3 s.
        origin.setRoute(
            "/missing.png",
            OriginRoute(
                status: 404,
                body: Data(repeating: 0x41, count: 4 << 20),
                behavior: .init(chunkSize: 64 << 10, chunkInterval: .milliseconds(50))
            )
        )
        let error = await ResponseTests.failure(DownloaderFixtures.downloader(), origin.url("/missing.png"))
        #expect(error?.code == .invalidDownloadStatusCode && error?.statusCode == 404)
        // The origin saw its response abandoned mid-body.
        await DownloaderFixtures.wait({ origin.abandonedResponses == 1 })
        #expect(origin.abandonedResponses == 1)
        await origin.stop()
    }

    @Test("The download timeout is idle time: a slow but steady body longer than it loads")
    func idleTimeout() async throws {
        let origin = try await OriginServer.start()
        let png = DownloaderFixtures.png
        // 128 chunks 0.25 s apart: at least 32 s in all (a busy machine only makes it longer),
        // never more than 0.25 s without a byte, against a 20 s timeout: 19.75 s of slack between
        // two chunks for an origin that shares the test process's two pool threads with every
        // suite starting beside it.
        origin.setRoute(
            "/steady.png",
            DownloaderFixtures.route(
                behavior: .init(chunkSize: max(1, png.count / 128), chunkInterval: .milliseconds(250))
            )
        )
        origin.setRoute(
            "/brief.png",
            DownloaderFixtures.route(
                behavior: .init(chunkSize: max(1, png.count / 8), chunkInterval: .milliseconds(250))
            )
        )
        origin.setRoute("/stalled.png", DownloaderFixtures.route(behavior: .init(stall: true)))
        var configuration = ImageDownloader.Configuration()
        configuration.downloadTimeout = .seconds(20)
        let result = try await ImageDownloader(configuration: configuration).image(with: origin.url("/steady.png"))
        #expect(result.data == png)
        // A server that sends nothing times out, however short the timeout.
        configuration.downloadTimeout = .seconds(1)
        let stalled = await ResponseTests.failure(
            ImageDownloader(configuration: configuration),
            origin.url("/stalled.png")
        )
        #expect(stalled?.code == .networkError)
        #expect(stalled?.underlying?.code == .timedOut)
        // 0 means the default (15 s), not "no time at all".
        configuration.downloadTimeout = .zero
        let defaulted = try await ImageDownloader(configuration: configuration).image(with: origin.url("/brief.png"))
        #expect(defaulted.data == png)
        await origin.stop()
    }

    @Test("Accept names exactly the formats the coders decode")
    func acceptHeader() async throws {
        let origin = try await OriginServer.start()
        origin.setRoute("/a.png", DownloaderFixtures.route())
        _ = try await DownloaderFixtures.downloader().image(with: origin.url("/a.png"))
        let accept = try #require(origin.requests.first?.header("accept"))
        #expect(
            accept
                == "image/webp,image/png,image/jpeg,image/gif,image/heic,image/heif,image/avif,image/tiff,image/bmp,"
                + "image/vnd.microsoft.icon,image/jxl"
        )
        #expect(ImageCodersManager.shared.acceptHeaderValue == accept)
        // Formats we only sniff are never advertised.
        for sniffedOnly in ["svg", "pdf"] { #expect(!accept.contains(sniffedOnly)) }
        let withoutAVIF = ImageCodersManager(coders: [JPEGCoder(), PNGCoder(), GIFCoder(), WebPCoder()])
        #expect(withoutAVIF.acceptHeaderValue == "image/webp,image/png,image/jpeg,image/gif")
        await origin.stop()
    }

    @Test("A FIFO named by a file:// URL fails at once instead of waiting for a writer")
    func fifoFile() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let fifo = folder.file("pipe.png")
        #expect(mkfifo(fifo.path, 0o644) == 0)
        let manager = ImageManager(cache: CacheFixtures.cache(folder), loader: DownloaderFixtures.downloader())
        do {
            _ = try await manager.loadImage(with: fifo)
            Issue.record("a FIFO loaded")
        } catch {
            #expect(error.code == .invalidURL)
            #expect(error.message.contains("FIFO"))
        }
    }

    @Test("The prefetcher waits for disk writes: a write that fails counts as failed, with the cause")
    func prefetchStoreFailure() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let origin = try await OriginServer.start()
        origin.setRoute("/a.png", DownloaderFixtures.route())
        // The cache folder's place is taken by a file: every disk write fails.
        try Data("x".utf8).write(to: folder.file("cache"))
        var configuration = ImageCache.Configuration()
        configuration.cleanupInterval = nil
        let cache = ImageCache(directory: folder.file("cache"), configuration: configuration)
        let prefetcher = ImagePrefetcher(manager: ImageManager(cache: cache, loader: DownloaderFixtures.downloader()))
        let token = prefetcher.prefetchURLs([origin.url("/a.png")])
        let counts = await withCheckedContinuation { continuation in token.onEnd { continuation.resume(returning: $0) }
        }
        #expect(counts.failed == 1)
        let failure = try #require(token.failures.first)
        #expect(failure.error.code == .cacheStoreFailed)
        #expect(failure.error.message.contains(folder.file("cache").path))
        await origin.stop()
    }
}
