import Foundation
import Testing
import WebImage
@_spi(WebImageInternals) import WebImageCoders
import WebImageHTTP
import WebImageOrigin
import WebImageTestSupport

@Suite("ImageDownloader responses", .timeLimit(.minutes(1)))
struct ResponseTests {
    static func failure(_ downloader: ImageDownloader, _ url: URL?) async -> WebImageError? {
        do {
            _ = try await downloader.image(with: url)
            return nil
        } catch {
            return error
        }
    }

    @Test("404, 500 and 304 map to their errors with the status")
    func statuses() async throws {
        let origin = try await OriginServer.start()
        origin.setRoute("/500", OriginRoute(status: 500, body: Data("boom".utf8)))
        origin.setRoute("/304", OriginRoute(status: 304))
        let downloader = DownloaderFixtures.downloader()
        let missing = await Self.failure(downloader, origin.url("/404"))
        #expect(missing?.code == .invalidDownloadStatusCode && missing?.statusCode == 404)
        let broken = await Self.failure(downloader, origin.url("/500"))
        #expect(broken?.code == .invalidDownloadStatusCode && broken?.statusCode == 500)
        let unchanged = await Self.failure(downloader, origin.url("/304"))
        #expect(unchanged?.code == .cacheNotModified && unchanged?.statusCode == 304)
        await origin.stop()
    }

    @Test("A response over maximumDownloadSize is downloadTooLarge; a request modifier may lift the limit")
    func downloadSizeLimit() async throws {
        let origin = try await OriginServer.start()
        let png = DownloaderFixtures.png
        origin.setRoute("/declared.png", DownloaderFixtures.route())
        origin.setRoute("/chunked.png", DownloaderFixtures.route(behavior: .init(chunkSize: 64, chunkedEncoding: true)))
        var configuration = ImageDownloader.Configuration()
        configuration.maximumDownloadSize = Int64(png.count - 1)
        let downloader = ImageDownloader(configuration: configuration)
        for path in ["/declared.png", "/chunked.png"] {
            let error = await Self.failure(downloader, origin.url(path))
            #expect(error?.code == .downloadTooLarge, "\(path): \(String(describing: error))")
            #expect(error?.message.contains(origin.url(path).absoluteString) == true)
            #expect(error?.message.contains("\(png.count - 1)-byte limit") == true)
        }
        let lifted = ImageContext(requestModifier: { request in
            var request = request
            request.maximumBodySize = Int64(png.count)
            return request
        })
        let result = try await downloader.image(with: origin.url("/chunked.png"), context: lifted)
        #expect(result.data == png && result.image?.width == 32)
        await origin.stop()
    }

    @Test("A nil, empty or non-http URL completes once, at once, with invalidURL")
    func invalidURLs() async throws {
        let downloader = DownloaderFixtures.downloader()
        for url in [nil, URL(string: "file:///tmp/x.png"), URL(string: "mailto:a@b.c")] {
            let calls = Locked<[WebImageError.Code?]>([])
            let token = downloader.download(with: url) { _, _, error, finished in
                if finished { calls.withLock { $0.append(error?.code) } }
            }
            #expect(token == nil)
            #expect(calls.value == [.invalidURL])
        }
    }

    @Test("Undecodable data is badImageData; avoidDecodeImage delivers the bytes")
    func decoding() async throws {
        let origin = try await OriginServer.start()
        origin.setRoute(
            "/text.png",
            OriginRoute(headers: [("Content-Type", "image/png")], body: Data("not an image".utf8))
        )
        origin.setRoute("/ok.png", DownloaderFixtures.route())
        let downloader = DownloaderFixtures.downloader()
        let bad = await Self.failure(downloader, origin.url("/text.png"))
        #expect(bad?.code == .badImageData)
        let raw = try await downloader.image(with: origin.url("/ok.png"), options: .avoidDecodeImage)
        #expect(raw.image == nil && raw.data == DownloaderFixtures.png)
        let thumbnail = try await downloader.image(
            with: origin.url("/ok.png"),
            context: ImageContext(thumbnailPixelSize: PixelSize(width: 8, height: 8))
        )
        #expect(thumbnail.image?.width == 8 && thumbnail.image?.height == 6)
        await origin.stop()
    }

    @Test("Progress starts at 0, ends at the full size, and is throttled between")
    func progress() async throws {
        let origin = try await OriginServer.start()
        let body = DownloaderFixtures.png + Data(count: 300_000)  // trailing bytes after IEND are ignored
        origin.setRoute(
            "/p.png",
            DownloaderFixtures.route(body, behavior: .init(chunkSize: 10_000, chunkInterval: .milliseconds(2)))
        )
        var configuration = ImageDownloader.Configuration()
        configuration.minimumProgressInterval = .milliseconds(50)
        let downloader = ImageDownloader(configuration: configuration)
        let reports = Locked<[(received: Int64, at: ContinuousClock.Instant)]>([])
        let finished = Locked(false)
        let start = ContinuousClock.now
        downloader.download(
            with: origin.url("/p.png"),
            progress: { received, _, _ in reports.withLock { $0.append((received, .now)) } },
            completed: { _, _, _, _ in finished.withLock { $0 = true } }
        )
        // Generous: the whole suite shares the cooperative pool with this origin's chunked sends.
        await DownloaderFixtures.wait({ finished.value }, timeout: .seconds(45))
        let elapsed = ContinuousClock.now - start
        let values = reports.value
        #expect(values.first?.received == 0)
        #expect(values.last?.received == Int64(body.count))
        // Throttled: the reports before the final one were let through at least 50 ms apart, so
        // their span covers that many intervals (less a little for the handler's clock running
        // after the throttle's), and their number follows the transfer's duration, not its chunks.
        let throttled = values.dropLast()
        if let first = throttled.first, let last = throttled.last, throttled.count > 1 {
            let span = last.at - first.at
            #expect(
                span >= .milliseconds(50) * (throttled.count - 1) - .milliseconds(30),
                "\(throttled.count) reports in \(span)"
            )
        }
        #expect(values.count <= Int(elapsed / .milliseconds(50)) + 2, "\(values.count) reports in \(elapsed)")
        await origin.stop()
    }
}
