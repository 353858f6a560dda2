import Foundation
import Testing
import WebImage
import WebImageHTTP
import WebImageOrigin

@Suite("ImageDownloader headers, modifiers, decryptor and HTTP caching", .timeLimit(.minutes(1)))
struct HooksTests {
    @Test("Default Accept, custom headers, and a request modifier that edits or cancels")
    func requests() async throws {
        let origin = try await OriginServer.start()
        origin.setRoute("/a.png", DownloaderFixtures.route())
        origin.setRoute("/blocked.png", DownloaderFixtures.route())
        let downloader = DownloaderFixtures.downloader()
        #expect(downloader.value(forHTTPHeaderField: "accept")?.contains("image/webp") == true)
        downloader.setValue("test-suite", forHTTPHeaderField: "X-Client")
        downloader.requestModifier = { request in
            guard !request.url.path.contains("blocked") else { return nil }
            var changed = request
            changed.headers[HTTPField.Name("X-Modified")!] = "yes"
            return changed
        }
        _ = try await downloader.image(with: origin.url("/a.png"))
        let sent = try #require(origin.requests.last)
        #expect(sent.header("accept")?.hasPrefix("image/webp") == true)
        #expect(sent.header("x-client") == "test-suite" && sent.header("x-modified") == "yes")
        do {
            _ = try await downloader.image(with: origin.url("/blocked.png"))
            Issue.record("a cancelled request loaded")
        } catch {
            #expect(error.code == .cancelled)
        }
        #expect(origin.requestCount(for: "/blocked.png") == 0)
        await origin.stop()
    }

    @Test("A response modifier can reject (invalidDownloadResponse); a decryptor runs before decoding")
    func responsesAndDecryption() async throws {
        let origin = try await OriginServer.start()
        let scrambled = Data(DownloaderFixtures.png.map { $0 ^ 0x5A })
        origin.setRoute("/secret.bin", .data(scrambled, contentType: "application/octet-stream"))
        origin.setRoute(
            "/reject.png",
            OriginRoute(headers: [("Content-Type", "image/png"), ("X-Reject", "1")], body: DownloaderFixtures.png)
        )
        let downloader = DownloaderFixtures.downloader()
        downloader.responseModifier = { $0.headers[HTTPField.Name("X-Reject")!] == nil ? $0 : nil }
        downloader.decryptor = { data, _ in Data(data.map { $0 ^ 0x5A }) }
        let decrypted = try await downloader.image(with: origin.url("/secret.bin"))
        #expect(decrypted.image?.width == 32 && decrypted.data == DownloaderFixtures.png)
        do {
            _ = try await downloader.image(with: origin.url("/reject.png"))
            Issue.record("a rejected response loaded")
        } catch {
            #expect(error.code == .invalidDownloadResponse)
        }
        await origin.stop()
    }

    @Test("refreshCached sends the cached validators; ignoreCachedResponse turns identical data into cacheNotModified")
    func httpCaching() async throws {
        let origin = try await OriginServer.start()
        origin.setRoute("/cached.png", OriginRoute(status: 304))
        origin.setRoute("/same.png", DownloaderFixtures.route())
        let downloader = DownloaderFixtures.downloader()
        let cached = ImageContext.CachedResponse(
            etag: "\"v7\"",
            lastModified: "Wed, 21 Oct 2015 07:28:00 GMT",
            data: DownloaderFixtures.png
        )
        do {
            _ = try await downloader.image(
                with: origin.url("/cached.png"),
                options: .refreshCached,
                context: ImageContext(cachedResponse: cached)
            )
            Issue.record("a 304 delivered an image")
        } catch {
            #expect(error.code == .cacheNotModified)
        }
        let revalidation = try #require(origin.requests.last)
        #expect(revalidation.header("if-none-match") == "\"v7\"")
        #expect(revalidation.header("if-modified-since") == "Wed, 21 Oct 2015 07:28:00 GMT")
        do {
            _ = try await downloader.image(
                with: origin.url("/same.png"),
                options: .ignoreCachedResponse,
                context: ImageContext(cachedResponse: cached)
            )
            Issue.record("identical data was delivered again")
        } catch {
            #expect(error.code == .cacheNotModified)
        }
        await origin.stop()
    }

    @Test("Basic auth, a timeout and a truncated body")
    func transport() async throws {
        let origin = try await OriginServer.start()
        origin.setRoute("/private.png", DownloaderFixtures.route(behavior: .init(requiredBasicAuth: ("ada", "pw"))))
        origin.setRoute("/stall.png", DownloaderFixtures.route(behavior: .init(stall: true)))
        // The head and a first chunk, then nothing for a minute.
        origin.setRoute(
            "/stalled-body.png",
            DownloaderFixtures.route(
                Data(count: 100_000),
                behavior: .init(chunkSize: 10_000, chunkInterval: .seconds(60))
            )
        )
        origin.setRoute(
            "/short.png",
            DownloaderFixtures.route(Data(count: 100_000), behavior: .init(truncateAfter: 1_000))
        )
        var configuration = ImageDownloader.Configuration()
        configuration.credential = HTTPCredential(user: "ada", password: "pw")
        let downloader = ImageDownloader(configuration: configuration)
        #expect(try await downloader.image(with: origin.url("/private.png")).image?.width == 32)
        // Only the stalled load needs a short timeout (a busy machine must not fail the others).
        var impatient = ImageDownloader.Configuration()
        impatient.downloadTimeout = .milliseconds(300)
        let cases = [
            ("/stall.png", HTTPSessionError.Code.timedOut, ImageDownloader(configuration: impatient)),
            ("/stalled-body.png", .timedOut, ImageDownloader(configuration: impatient)),
            ("/short.png", .connectionLost, downloader),
        ]
        for (path, underlying, loader) in cases {
            do {
                _ = try await loader.image(with: origin.url(path))
                Issue.record("\(path) loaded")
            } catch {
                #expect(error.code == .networkError && error.underlying?.code == underlying, "\(path): \(error)")
            }
        }
        await origin.stop()
    }
}
