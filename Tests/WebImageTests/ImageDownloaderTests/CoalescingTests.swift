import Foundation
import Testing
import WebImage
import WebImageOrigin
import WebImageTestSupport

@Suite("ImageDownloader coalescing and cancellation", .timeLimit(.minutes(1)))
struct CoalescingTests {
    @Test("N concurrent loads of one URL make one request and N completions")
    func coalescing() async throws {
        let origin = try await OriginServer.start()
        let gate = OriginGate()
        origin.setRoute("/a.png", DownloaderFixtures.route(behavior: .init(gate: gate)))
        let downloader = DownloaderFixtures.downloader()
        let completions = Locked<[Int]>([])
        for index in 0..<20 {
            downloader.download(with: origin.url("/a.png")) { image, _, error, finished in
                if finished, error == nil, image?.width == 32 { completions.withLock { $0.append(index) } }
            }
        }
        #expect(downloader.currentDownloadCount == 1)
        await DownloaderFixtures.wait { origin.requestCount(for: "/a.png") == 1 }
        // A caller joining while the load is in flight still gets the completion.
        downloader.download(with: origin.url("/a.png")) { _, _, error, finished in
            if finished, error == nil { completions.withLock { $0.append(99) } }
        }
        gate.open()
        await DownloaderFixtures.wait { completions.value.count == 21 }
        #expect(completions.value.count == 21)
        #expect(origin.requestCount(for: "/a.png") == 1)
        // Once the operation is done (a caller arriving while it still gives out its result
        // joins it), a new load starts fresh.
        await DownloaderFixtures.wait { downloader.currentDownloadCount == 0 }
        _ = try await downloader.image(with: origin.url("/a.png"))
        #expect(origin.requestCount(for: "/a.png") == 2)
        await origin.stop()
    }

    @Test("Callers arriving while a result goes out start a new load, which they share")
    func freshAnswerAfterResult() async throws {
        let origin = try await OriginServer.start()
        origin.setRoute("/d.png", DownloaderFixtures.route())
        let url = origin.url("/d.png")
        let downloader = DownloaderFixtures.downloader()
        let outcomes = Locked<[String: String]>([:])
        let record: @Sendable (String) -> ImageDownloader.CompletedHandler = { name in
            { image, _, error, finished in
                guard finished else { return }
                outcomes.withLock { $0[name] = error?.code.rawValue ?? "ok:\(image?.width ?? 0)" }
            }
        }
        // The first caller's completion runs inside the operation's delivery: both later callers
        // arrive while its result goes out; neither takes it, the second joins the first's load.
        downloader.download(with: url) { image, data, error, finished in
            record("first")(image, data, error, finished)
            guard finished else { return }
            downloader.download(with: url, completed: record("joined"))
            downloader.download(with: url, options: .fromLoaderOnly, completed: record("fresh"))
        }
        await DownloaderFixtures.wait { outcomes.value.count == 3 }
        #expect(outcomes.value == ["first": "ok:32", "joined": "ok:32", "fresh": "ok:32"])
        #expect(
            origin.requestCount(for: "/d.png") == 2,
            "one request for the first caller, one shared by the two late ones"
        )
        await origin.stop()
    }

    @Test("A conditional request (refreshCached) never shares with an unconditional load of the URL")
    func conditionalNotShared() async throws {
        let origin = try await OriginServer.start()
        let gate = OriginGate()
        var route = DownloaderFixtures.route(behavior: .init(gate: gate))
        route.headers.append(("ETag", "\"v1\""))
        origin.setRoute("/c.png", route)
        let url = origin.url("/c.png")
        let downloader = DownloaderFixtures.downloader()
        let conditional = Locked<[String]>([])
        let plain = Locked<[String]>([])
        var context = ImageContext()
        context.cachedResponse = .init(etag: "\"v1\"")
        downloader.download(with: url, options: .refreshCached, context: context) { image, _, error, finished in
            if finished { conditional.withLock { $0.append(error?.code.rawValue ?? "ok:\(image?.width ?? 0)") } }
        }
        await DownloaderFixtures.wait { origin.requestCount(for: "/c.png") == 1 }
        // A direct caller (or a fromLoaderOnly load) while the revalidation is in flight.
        downloader.download(with: url) { image, _, error, finished in
            if finished { plain.withLock { $0.append(error?.code.rawValue ?? "ok:\(image?.width ?? 0)") } }
        }
        await DownloaderFixtures.wait { origin.requestCount(for: "/c.png") == 2 }
        gate.open()
        await DownloaderFixtures.wait { !conditional.value.isEmpty && !plain.value.isEmpty }
        #expect(conditional.value == ["cacheNotModified"])
        #expect(plain.value == ["ok:32"])
        #expect(
            origin.requests.map { $0.header("if-none-match") }.sorted { ($0 ?? "") < ($1 ?? "") } == [nil, "\"v1\""]
        )
        await origin.stop()
    }

    @Test("Cancelling one of two callers: the other completes, the cancelled one gets cancelled once")
    func cancelOne() async throws {
        let origin = try await OriginServer.start()
        let gate = OriginGate()
        origin.setRoute("/b.png", DownloaderFixtures.route(behavior: .init(gate: gate)))
        let downloader = DownloaderFixtures.downloader()
        let first = Locked<[String]>([])
        let second = Locked<[String]>([])
        let token = downloader.download(with: origin.url("/b.png")) { _, _, error, _ in
            first.withLock { $0.append(error?.code.rawValue ?? "ok") }
        }
        downloader.download(with: origin.url("/b.png")) { image, _, error, _ in
            second.withLock { $0.append(error?.code.rawValue ?? "ok:\(image?.width ?? 0)") }
        }
        await DownloaderFixtures.wait { origin.requestCount(for: "/b.png") == 1 }
        try #require(token).cancel()
        #expect(first.value == ["cancelled"])
        gate.open()
        await DownloaderFixtures.wait { !second.value.isEmpty }
        #expect(second.value == ["ok:32"])
        #expect(first.value == ["cancelled"], "no second completion for the cancelled caller")
        await origin.stop()
    }

    @Test("Cancelling every caller stops the network load: the origin sees the connection dropped")
    func cancelAll() async throws {
        let origin = try await OriginServer.start()
        origin.setRoute(
            "/slow.png",
            DownloaderFixtures.route(
                Data(count: 2_000_000),
                behavior: .init(chunkSize: 20_000, chunkInterval: .milliseconds(10))
            )
        )
        let downloader = DownloaderFixtures.downloader()
        let results = Locked<[String]>([])
        let tokens = (0..<3).map { _ in
            downloader.download(with: origin.url("/slow.png")) { _, _, error, _ in
                results.withLock { $0.append(error?.code.rawValue ?? "ok") }
            }
        }
        await DownloaderFixtures.wait { origin.requestCount(for: "/slow.png") == 1 }
        try await Task.sleep(for: .milliseconds(50))
        for token in tokens { token?.cancel() }
        #expect(results.value == ["cancelled", "cancelled", "cancelled"])
        await DownloaderFixtures.wait { origin.abandonedResponses == 1 }
        #expect(origin.abandonedResponses == 1)
        #expect(downloader.currentDownloadCount == 0)
        await origin.stop()
    }

    @Test("Releasing the downloader cancels its loads: waiting and running callers get cancelled")
    func releasedDownloader() async throws {
        let origin = try await OriginServer.start()
        origin.setRoute("/stalled.png", DownloaderFixtures.route(behavior: .init(stall: true)))
        origin.setRoute("/waiting.png", DownloaderFixtures.route())
        let results = Locked<[String: String]>([:])
        do {
            var configuration = ImageDownloader.Configuration()
            configuration.maxConcurrentDownloads = 1
            let downloader = ImageDownloader(configuration: configuration)
            for name in ["stalled", "waiting"] {
                downloader.download(with: origin.url("/\(name).png")) { _, _, error, _ in
                    results.withLock { $0[name] = error?.code.rawValue ?? "ok" }
                }
            }
            await DownloaderFixtures.wait { origin.requestCount(for: "/stalled.png") == 1 }
        }
        await DownloaderFixtures.wait { results.value.count == 2 }
        #expect(results.value == ["stalled": "cancelled", "waiting": "cancelled"])
        #expect(origin.requestCount(for: "/waiting.png") == 0)
        await origin.stop()
    }

    @Test("Cancelling the Swift task of an async load cancels that caller")
    func asyncCancellation() async throws {
        let origin = try await OriginServer.start()
        let gate = OriginGate()
        origin.setRoute("/c.png", DownloaderFixtures.route(behavior: .init(gate: gate)))
        let downloader = DownloaderFixtures.downloader()
        let load = Task { try await downloader.image(with: origin.url("/c.png")) }
        await DownloaderFixtures.wait { origin.requestCount(for: "/c.png") == 1 }
        load.cancel()
        do {
            _ = try await load.value
            Issue.record("a cancelled load succeeded")
        } catch let error as WebImageError {
            #expect(error.code == .cancelled)
        }
        gate.open()
        await origin.stop()
    }
}
