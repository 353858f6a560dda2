import Foundation
import Testing
import WebImageCoders
import WebImageHTTP
import WebImageOrigin
import WebImageTestSupport

@testable import WebImage

/// Retries that back off and downloads that resume, against a real origin on loopback.
@Suite("ImageDownloader: retries and resumed downloads", .timeLimit(.minutes(1)))
struct RetryTests {
    /// A 100 KB PNG of noise: large enough that half of it is many TCP segments.
    static let large: Data = {
        let bitmap = GeneratedImages.noise(width: 180, height: 140)
        return try! PNGCoder().encode(DecodedImage(bitmap: bitmap, format: .png), as: .png, options: .init())
    }()

    static func downloader(_ strategy: (any ImageRetryStrategy)?) -> ImageDownloader {
        var configuration = ImageDownloader.Configuration()
        configuration.retryStrategy = strategy
        return ImageDownloader(configuration: configuration)
    }

    @Test("503 twice with Retry-After: 1, then 200: success after at least 2 s and three requests")
    func retryAfter() async throws {
        let origin = try await OriginServer.start()
        defer { Task { await origin.stop() } }
        origin.setRoute("/busy.png", OriginRoute(status: 503, headers: [("Retry-After", "1")]))
        let recovered = Task {
            await waitUntil({ origin.requestCount(for: "/busy.png") >= 2 }, timeout: .seconds(40))
            origin.setRoute("/busy.png", DownloaderFixtures.route())
        }
        let downloader = Self.downloader(BackoffRetryStrategy(maximumRetryCount: 3))
        let clock = ContinuousClock()
        let start = clock.now
        let result = try await downloader.image(with: origin.url("/busy.png"))
        #expect(clock.now - start >= .seconds(2))
        #expect(result.image?.width == 32)
        #expect(origin.requestCount(for: "/busy.png") == 3)
        await recovered.value
    }

    @Test("404, a refused retry count and a Retry-After past the cap: one request each, the failure as it came")
    func notRetried() async throws {
        let origin = try await OriginServer.start()
        defer { Task { await origin.stop() } }
        origin.setRoute("/gone.png", OriginRoute(status: 404))
        origin.setRoute("/later.png", OriginRoute(status: 503, headers: [("Retry-After", "3600")]))
        let downloader = Self.downloader(BackoffRetryStrategy(maximumRetryCount: 3))
        for path in ["/gone.png", "/later.png"] {
            do {
                _ = try await downloader.image(with: origin.url(path))
                Issue.record("\(path) loaded")
            } catch {
                #expect(error.code == .invalidDownloadStatusCode)
            }
            #expect(origin.requestCount(for: path) == 1, "\(path)")
        }
        // No strategy: a 503 is reported at once.
        origin.setRoute("/busy.png", OriginRoute(status: 503))
        await #expect(throws: WebImageError.self) {
            try await Self.downloader(nil).image(with: origin.url("/busy.png"))
        }
        #expect(origin.requestCount(for: "/busy.png") == 1)
    }

    /// Loads `/big.png` (``large``, served with `etag` and `Accept-Ranges: bytes`) through a
    /// downloader that retries once a second: the first response is cut at half, the second is
    /// whole (the retry waits a second for the switch). Returns the result and the requests.
    static func loadCutOnce(etag: String) async throws -> (ImageDownloadResult, [OriginRecordedRequest]) {
        let origin = try await OriginServer.start()
        defer { Task { await origin.stop() } }
        var cut = OriginRoute(
            headers: [("Content-Type", "image/png"), ("ETag", etag), ("Accept-Ranges", "bytes")],
            body: large
        )
        cut.behavior.truncateAfter = large.count / 2
        origin.setRoute("/big.png", cut)
        let whole = Task {
            await waitUntil({ origin.requestCount(for: "/big.png") >= 1 }, timeout: .seconds(40))
            cut.behavior.truncateAfter = nil
            origin.setRoute("/big.png", cut)
        }
        let downloader = downloader(BackoffRetryStrategy(maximumRetryCount: 2, initialDelay: .seconds(1), jitter: 0))
        let result = try await downloader.image(with: origin.url("/big.png"))
        await whole.value
        #expect(downloader.resumableData.byteCount == 0)
        return (result, origin.requests.filter { $0.path == "/big.png" })
    }

    @Test("A body cut at half resumes with Range and If-Range: the rest only, and the same bytes")
    func resumes() async throws {
        let half = Self.large.count / 2
        let (result, requests) = try await Self.loadCutOnce(etag: "\"big\"")
        #expect(result.data == Self.large)
        #expect(result.image?.width == 180)
        #expect(requests.count == 2)
        #expect(requests.first?.header("range") == nil)
        // The retry asks for the rest of what arrived (the origin's close may drop some of the
        // half it wrote), under the validator of the first response.
        let range = try #require(requests.last?.header("range"))
        let resumedAt = try #require(Int(range.dropFirst("bytes=".count).dropLast()))
        #expect(range == "bytes=\(resumedAt)-")
        #expect(resumedAt > 0 && resumedAt <= half)
        #expect(requests.last?.header("if-range") == "\"big\"")
        // Served: at most the half before the cut, then the rest: not the file twice.
        let served = half + (Self.large.count - resumedAt)
        #expect(Double(served) < 1.25 * Double(Self.large.count))
    }

    @Test("A body cut under a weak ETag is retried whole: If-Range takes no weak validator")
    func weakValidatorStartsOver() async throws {
        let (result, requests) = try await Self.loadCutOnce(etag: "W/\"big\"")
        #expect(result.data == Self.large)
        #expect(requests.count == 2)
        // A server may answer a Range under a weak validator with bytes of another version: the
        // retry asks for the whole image.
        #expect(requests.last?.header("range") == nil)
        #expect(requests.last?.header("if-range") == nil)
    }

    @Test("A cut download with no retries left is continued by the next download of the URL")
    func nextLoadResumes() async throws {
        let origin = try await OriginServer.start()
        defer { Task { await origin.stop() } }
        var route = OriginRoute(
            headers: [
                ("Content-Type", "image/png"), ("Last-Modified", "Sun, 06 Nov 1994 08:49:37 GMT"),
                ("Accept-Ranges", "bytes"),
            ],
            body: Self.large
        )
        route.behavior.truncateAfter = Self.large.count / 2
        origin.setRoute("/big.png", route)
        let downloader = Self.downloader(nil)
        await #expect(throws: WebImageError.self) { try await downloader.image(with: origin.url("/big.png")) }
        let kept = downloader.resumableData.byteCount
        #expect(kept > 0 && kept <= Self.large.count / 2)
        route.behavior.truncateAfter = nil
        origin.setRoute("/big.png", route)
        let result = try await downloader.image(with: origin.url("/big.png"))
        #expect(result.data == Self.large)
        #expect(origin.requests.last?.header("range") == "bytes=\(kept)-")
        #expect(origin.requests.last?.header("if-range") == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(downloader.resumableData.byteCount == 0)
    }

    @Test("A changed image answers the resumed request with 200: the download starts over cleanly")
    func startsOver() async throws {
        let origin = try await OriginServer.start()
        defer { Task { await origin.stop() } }
        var cut = OriginRoute(
            headers: [("Content-Type", "image/png"), ("ETag", "\"v1\""), ("Accept-Ranges", "bytes")],
            body: Self.large
        )
        cut.behavior.truncateAfter = Self.large.count / 2
        origin.setRoute("/big.png", cut)
        // The image changes once the first, cut attempt is in (the retry waits a second).
        let changed = Task {
            await waitUntil({ origin.requestCount(for: "/big.png") >= 1 }, timeout: .seconds(40))
            origin.setRoute(
                "/big.png",
                OriginRoute(
                    headers: [("Content-Type", "image/png"), ("ETag", "\"v2\""), ("Accept-Ranges", "bytes")],
                    body: DownloaderFixtures.png
                )
            )
        }
        let downloader = Self.downloader(
            BackoffRetryStrategy(maximumRetryCount: 2, initialDelay: .seconds(1), jitter: 0)
        )
        let result = try await downloader.image(with: origin.url("/big.png"))
        await changed.value
        #expect(result.data == DownloaderFixtures.png)
        #expect(origin.requestCount(for: "/big.png") == 2)
        #expect(origin.requests.last?.header("if-range") == "\"v1\"")
    }

    @Test("Cancelling during the wait ends the load at once, with no further request")
    func cancelledWhileWaiting() async throws {
        let origin = try await OriginServer.start()
        defer { Task { await origin.stop() } }
        origin.setRoute("/busy.png", OriginRoute(status: 503, headers: [("Retry-After", "30")]))
        let downloader = Self.downloader(BackoffRetryStrategy(maximumRetryCount: 3))
        let load = Task { try await downloader.image(with: origin.url("/busy.png")) }
        #expect(await waitUntil { origin.requestCount(for: "/busy.png") == 1 })
        load.cancel()
        do {
            _ = try await load.value
            Issue.record("a cancelled load succeeded")
        } catch let error as WebImageError {
            #expect(error.code == .cancelled)
        }
        #expect(await waitUntil { downloader.currentDownloadCount == 0 })
        #expect(origin.requestCount(for: "/busy.png") == 1)
    }

    @Test("Retry-After as seconds or a date; backoff doubles to its cap; only transient failures count")
    func strategyRules() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(DownloadRetryContext.retryAfter("2", now: now) == .seconds(2))
        #expect(
            DownloadRetryContext.retryAfter(HTTPDate.string(from: now.addingTimeInterval(90)), now: now) == .seconds(90)
        )
        #expect(DownloadRetryContext.retryAfter("soon", now: now) == nil)
        let strategy = BackoffRetryStrategy(
            maximumRetryCount: 5,
            initialDelay: .milliseconds(500),
            maximumDelay: .seconds(2),
            jitter: 0
        )
        let url = URL(string: "http://127.0.0.1/a.png")!
        let delays = (1...6).map {
            strategy.retryDelay(for: DownloadRetryContext(url: url, attempt: $0, statusCode: 503))
        }
        #expect(delays == [.milliseconds(500), .seconds(1), .seconds(2), .seconds(2), .seconds(2), nil])
        let jittered = BackoffRetryStrategy(initialDelay: .seconds(1), jitter: 0.5)
            .retryDelay(for: DownloadRetryContext(url: url, attempt: 1, statusCode: 503))
        #expect(jittered.map { $0 > .milliseconds(499) && $0 <= .seconds(1) } == true)
        for status in [408, 429, 500, 502, 503, 504] {
            #expect(DownloadRetryContext(url: url, attempt: 1, statusCode: status).isTransient)
        }
        for status in [400, 401, 403, 404, 410, 501] {
            #expect(!DownloadRetryContext(url: url, attempt: 1, statusCode: status).isTransient)
        }
    }
}
