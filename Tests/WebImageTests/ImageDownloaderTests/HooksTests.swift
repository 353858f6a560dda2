import Foundation
import Synchronization
import Testing
import WebImage
import WebImageHTTP
import WebImageOrigin
import WebImageTestSupport

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

@Suite("Per-load response modifier and decryptor (SDWebImage's context options)", .timeLimit(.minutes(1)))
struct PerLoadHooksTests {
    @Test("A load's own decryptor decrypts its bytes only; the same URL loaded without one is its own request")
    func perLoadDecryptor() async throws {
        let origin = try await OriginServer.start()
        let scrambled = Data(DownloaderFixtures.png.map { $0 ^ 0x5A })
        let gate = OriginGate()
        origin.setRoute(
            "/secret.bin",
            .data(scrambled, contentType: "application/octet-stream", behavior: .init(gate: gate))
        )
        let downloader = DownloaderFixtures.downloader()
        var context = ImageContext()
        context.decryptor = { data, response in
            response.statusCode == 200 ? Data(data.map { $0 ^ 0x5A }) : nil
        }
        let decrypting = Task { try await downloader.image(with: origin.url("/secret.bin"), context: context) }
        let plain = Task { try await downloader.image(with: origin.url("/secret.bin")) }
        await DownloaderFixtures.wait { origin.requestCount(for: "/secret.bin") == 2 }
        #expect(origin.requestCount(for: "/secret.bin") == 2, "a load with a decryptor shares no download")
        gate.open()
        let decrypted = try await decrypting.value
        #expect(decrypted.image?.width == 32 && decrypted.data == DownloaderFixtures.png)
        do {
            _ = try await plain.value
            Issue.record("the scrambled bytes decoded without the decryptor")
        } catch {
            #expect((error as? WebImageError)?.code == .badImageData)
        }
        var refusing = ImageContext()
        refusing.decryptor = { _, _ in nil }
        do {
            _ = try await downloader.image(with: origin.url("/secret.bin"), context: refusing)
            Issue.record("a decryptor's nil loaded")
        } catch {
            #expect(error.code == .badImageData && error.message.contains("decryptor"))
        }
        await origin.stop()
    }

    @Test("A load's own response modifier runs before the downloader's and can accept a status or reject the response")
    func perLoadResponseModifier() async throws {
        let origin = try await OriginServer.start()
        origin.setRoute(
            "/teapot.png",
            OriginRoute(status: 418, headers: [("Content-Type", "image/png")], body: DownloaderFixtures.png)
        )
        let downloader = DownloaderFixtures.downloader()
        let order = Mutex<[String]>([])
        downloader.responseModifier = { response in
            order.withLock { $0.append("downloader \(response.statusCode)") }
            return response
        }
        var context = ImageContext()
        context.responseModifier = { response in
            order.withLock { $0.append("load \(response.statusCode)") }
            var accepted = response
            accepted.statusCode = 200
            return accepted
        }
        let loaded = try await downloader.image(with: origin.url("/teapot.png"), context: context)
        #expect(loaded.image?.width == 32)
        #expect(order.withLock { $0 } == ["load 418", "downloader 200"])
        do {
            _ = try await downloader.image(with: origin.url("/teapot.png"))
            Issue.record("a 418 loaded without the load's modifier")
        } catch {
            #expect(error.code == .invalidDownloadStatusCode && error.statusCode == 418)
        }
        var rejecting = ImageContext()
        rejecting.responseModifier = { _ in nil }
        do {
            _ = try await downloader.image(with: origin.url("/teapot.png"), context: rejecting)
            Issue.record("a rejected response loaded")
        } catch {
            #expect(error.code == .invalidDownloadResponse)
        }
        await origin.stop()
    }

    @Test("A decryptor turns progressive decoding off: no partial image, the final one decrypted")
    func decryptorStopsProgressive() async throws {
        let jpeg = try JPEGCoder().encode(
            DecodedImage(bitmap: GeneratedImages.noise(width: 120, height: 90), format: .jpeg),
            as: .jpeg,
            options: .init(progressive: true)
        )
        let origin = try await OriginServer.start()
        // The control's last chunk waits for its first partial image; the encrypted copy drips
        // alike, with its own queue and budget too, and has none to wait for.
        let control = DownloaderFixtures.HeldTail(jpeg)
        origin.setRoute("/p.jpg", control.route)
        let dripped = OriginRoute.Behavior(chunkSize: 1_000, chunkInterval: .milliseconds(10))
        origin.setRoute(
            "/p.bin",
            .data(Data(jpeg.map { $0 ^ 0x5A }), contentType: "application/octet-stream", behavior: dripped)
        )
        let downloader = DownloaderFixtures.downloader()
        func partials(_ path: String, _ context: ImageContext) async throws -> (Int, ImageDownloadResult?) {
            var count = 0
            var final: ImageDownloadResult?
            for try await event in downloader.events(
                with: origin.url(path),
                options: .progressiveLoad,
                context: context
            ) {
                if case .partial = event {
                    count += 1
                    control.releaseTail()
                }
                if case .finished(let result) = event { final = result }
            }
            return (count, final)
        }
        let (plainPartials, plain) = try await partials("/p.jpg", control.context)
        #expect(plainPartials >= 1 && plain?.image?.width == 120, "the control shows partial images")
        var context = control.context
        context.decryptor = { data, _ in Data(data.map { $0 ^ 0x5A }) }
        let (decryptedPartials, decrypted) = try await partials("/p.bin", context)
        #expect(decryptedPartials == 0)
        #expect(decrypted?.image?.width == 120 && decrypted?.data == jpeg)
        await origin.stop()
    }
}

@Suite("useURLCache (SDWebImage's UseNSURLCache)", .timeLimit(.minutes(1)))
struct URLCacheOptionTests {
    @Test("Downloads use the session's response cache only with useURLCache; without it they neither read nor fill it")
    func useURLCache() async throws {
        let origin = try await OriginServer.start()
        origin.setRoute(
            "/c.png",
            OriginRoute(
                headers: [("Content-Type", "image/png"), ("Cache-Control", "max-age=600")],
                body: DownloaderFixtures.png
            )
        )
        let cache = HTTPResponseCache()
        var configuration = ImageDownloader.Configuration()
        configuration.urlCache = cache
        let downloader = ImageDownloader(configuration: configuration)
        for _ in 0..<2 { _ = try await downloader.image(with: origin.url("/c.png")) }
        #expect(origin.requestCount(for: "/c.png") == 2)
        #expect(cache.currentMemoryUsage == 0, "nothing stored without the option")
        for _ in 0..<2 {
            let loaded = try await downloader.image(with: origin.url("/c.png"), options: .useURLCache)
            #expect(loaded.image?.width == 32 && loaded.data == DownloaderFixtures.png)
        }
        #expect(origin.requestCount(for: "/c.png") == 3, "the second load with the option came from the cache")
        #expect(cache.currentMemoryUsage > DownloaderFixtures.png.count)
        _ = try await downloader.image(with: origin.url("/c.png"))
        #expect(origin.requestCount(for: "/c.png") == 4, "a load without the option does not read it")
        await origin.stop()
    }
}
