import Foundation
import Testing
import WebImage
import WebImageHTTP
import WebImageOrigin
import WebImageTestSupport

/// The manager follows each response's caching headers, against a real origin on loopback.
@Suite("ImageManager: HTTP freshness", .timeLimit(.minutes(1)))
struct FreshnessLoadTests {
    /// A PNG route with an ETag and `headers`.
    static func route(
        _ headers: [(String, String)],
        body: Data = ManagerImages.redPNG,
        etag: String = "\"v1\""
    )
        -> OriginRoute
    {
        OriginRoute(status: 200, headers: [("Content-Type", "image/png"), ("ETag", etag)] + headers, body: body)
    }

    static func isBlue(_ result: ImageLoadResult) -> Bool { result.image?.bitmap[0, 0].b == 255 }

    @Test("A fresh entry (max-age) is used from disk with no request")
    func freshEntry() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        origin.setRoute("/a.png", Self.route([("Cache-Control", "max-age=600")]))
        let url = origin.url("/a.png")
        _ = try await fixture.manager.loadImage(with: url)
        await fixture.settle()
        fixture.cache.clearMemory()
        let second = try await fixture.manager.loadImage(with: url)
        #expect(second.cacheType == .disk)
        #expect(origin.requestCount(for: "/a.png") == 1)
        let stored = await fixture.cache.diskEntry(forKey: url.absoluteString)
        #expect(stored?.metadata.httpCaching?.cacheControl == "max-age=600")
        await origin.stop()
    }

    @Test("max-age=0 and no-cache: every use sends one conditional request, answered 304 with no body")
    func alwaysRevalidated() async throws {
        for header in ["max-age=0", "no-cache"] {
            let fixture = try ManagerFixture()
            defer { fixture.folder.remove() }
            let origin = try await OriginServer.start()
            origin.setRoute("/a.png", Self.route([("Cache-Control", header)]))
            let url = origin.url("/a.png")
            _ = try await fixture.manager.loadImage(with: url)
            await fixture.settle()
            // No memory clearing: the memory entry expires with the response's freshness too.
            let second = try await fixture.manager.loadImage(with: url)
            #expect(second.cacheType == .disk, "\(header)")
            #expect(second.image?.bitmap[0, 0].r == 255)
            #expect(origin.requestCount(for: "/a.png") == 2, "\(header)")
            #expect(origin.requests.last?.header("if-none-match") == "\"v1\"", "\(header)")
            await origin.stop()
        }
    }

    @Test("no-store and Vary: * are never kept: nothing on disk or in memory, each load asks again")
    func neverStored() async throws {
        for header in [("Cache-Control", "no-store"), ("Vary", "*")] {
            let fixture = try ManagerFixture()
            defer { fixture.folder.remove() }
            let origin = try await OriginServer.start()
            origin.setRoute("/a.png", Self.route([header]))
            let url = origin.url("/a.png")
            let first = try await fixture.manager.loadImage(with: url, options: .waitStoreCache)
            #expect(first.image != nil)
            await fixture.settle()
            #expect(await fixture.cache.diskEntry(forKey: url.absoluteString) == nil, "\(header)")
            let second = try await fixture.manager.loadImage(with: url)
            #expect(second.cacheType == ImageCacheType.none, "\(header)")
            #expect(origin.requestCount(for: "/a.png") == 2)
            #expect(origin.requests.last?.header("if-none-match") == nil)
            await origin.stop()
        }
    }

    @Test("Expires ahead: no request; Expires in the past: revalidated")
    func expires() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        let ahead = HTTPDate.string(from: Date().addingTimeInterval(3600))
        let past = HTTPDate.string(from: Date().addingTimeInterval(-3600))
        origin.setRoute("/ahead.png", Self.route([("Expires", ahead)]))
        origin.setRoute("/past.png", Self.route([("Expires", past)]))
        for path in ["/ahead.png", "/past.png"] {
            _ = try await fixture.manager.loadImage(with: origin.url(path))
        }
        await fixture.settle()
        fixture.cache.clearMemory()
        for path in ["/ahead.png", "/past.png"] {
            #expect(try await fixture.manager.loadImage(with: origin.url(path)).cacheType == .disk)
        }
        #expect(origin.requestCount(for: "/ahead.png") == 1)
        #expect(origin.requestCount(for: "/past.png") == 2)
        #expect(origin.requests.last { $0.path == "/past.png" }?.header("if-none-match") == "\"v1\"")
        await origin.stop()
    }

    @Test("max-age=1, 2 s later: revalidated once; the 304's headers make the entry fresh again")
    func expiresWithTime() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        origin.setRoute("/a.png", Self.route([("Cache-Control", "max-age=1")]))
        let url = origin.url("/a.png")
        _ = try await fixture.manager.loadImage(with: url)
        await fixture.settle()
        try await Task.sleep(for: .seconds(2))
        // The origin now allows an hour: its 304 says so, and the stored headers take it.
        origin.setRoute("/a.png", Self.route([("Cache-Control", "max-age=3600")]))
        let revalidated = try await fixture.manager.loadImage(with: url)
        #expect(revalidated.cacheType == .disk)
        #expect(origin.requestCount(for: "/a.png") == 2)
        #expect(origin.requests.last?.header("if-none-match") == "\"v1\"")
        await fixture.settle()
        let entry = await fixture.cache.diskEntry(forKey: url.absoluteString)
        #expect(entry?.metadata.httpCaching?.cacheControl == "max-age=3600")
        fixture.cache.clearMemory()
        #expect(try await fixture.manager.loadImage(with: url).cacheType == .disk)
        #expect(origin.requestCount(for: "/a.png") == 2)
        await origin.stop()
    }

    @Test("A changed image at a stale entry's origin replaces it (200 to the conditional request)")
    func changedAtOrigin() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        origin.setRoute("/a.png", Self.route([("Cache-Control", "max-age=0")]))
        let url = origin.url("/a.png")
        _ = try await fixture.manager.loadImage(with: url)
        await fixture.settle()
        origin.setRoute(
            "/a.png",
            Self.route([("Cache-Control", "max-age=600")], body: ManagerImages.bluePNG, etag: "\"v2\"")
        )
        let changed = try await fixture.manager.loadImage(with: url)
        #expect(changed.cacheType == ImageCacheType.none)
        #expect(Self.isBlue(changed))
        await fixture.settle()
        fixture.cache.clearMemory()
        let stored = try await fixture.manager.loadImage(with: url)
        #expect(stored.cacheType == .disk && Self.isBlue(stored))
        #expect(origin.requestCount(for: "/a.png") == 2)
        await origin.stop()
    }

    @Test("stale-while-revalidate: the stale image at once, one background request, its answer kept")
    func staleWhileRevalidate() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        origin.setRoute("/a.png", Self.route([("Cache-Control", "max-age=1, stale-while-revalidate=60")]))
        let url = origin.url("/a.png")
        _ = try await fixture.manager.loadImage(with: url)
        await fixture.settle()
        try await Task.sleep(for: .seconds(2))
        let gate = OriginGate()
        var changed = Self.route([("Cache-Control", "max-age=600")], body: ManagerImages.bluePNG, etag: "\"v2\"")
        changed.behavior.gate = gate
        origin.setRoute("/a.png", changed)
        // Both loads answer from the stale entry while the one background request waits at the gate.
        for _ in 0..<2 {
            let stale = try await fixture.manager.loadImage(with: url)
            #expect(stale.cacheType == .disk && !Self.isBlue(stale))
        }
        #expect(await waitUntil { origin.requestCount(for: "/a.png") == 2 })
        gate.open()
        #expect(
            await waitUntil {
                fixture.cache.imageFromMemoryCache(forKey: url.absoluteString)?.bitmap[0, 0].b == 255
            }
        )
        let refreshed = try await fixture.manager.loadImage(with: url)
        #expect(Self.isBlue(refreshed) && refreshed.cacheType == .memory)
        #expect(origin.requestCount(for: "/a.png") == 2)
        await origin.stop()
    }

    @Test("An origin that cannot be reached: the stale image stands in, unless must-revalidate")
    func staleWhenDisconnected() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        origin.setRoute("/a.png", Self.route([("Cache-Control", "max-age=0")]))
        origin.setRoute("/strict.png", Self.route([("Cache-Control", "max-age=0, must-revalidate")]))
        let (url, strict) = (origin.url("/a.png"), origin.url("/strict.png"))
        _ = try await fixture.manager.loadImage(with: url)
        _ = try await fixture.manager.loadImage(with: strict)
        await fixture.settle()
        await origin.stop()
        let stale = try await fixture.manager.loadImage(with: url)
        #expect(stale.cacheType == .disk && stale.image != nil)
        await #expect(throws: WebImageError.self) { try await fixture.manager.loadImage(with: strict) }
    }

    @Test("refreshCached revalidates even a fresh entry, but not a fresh immutable one")
    func immutable() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        origin.setRoute("/i.png", Self.route([("Cache-Control", "max-age=600, immutable")]))
        origin.setRoute("/m.png", Self.route([("Cache-Control", "max-age=600")]))
        for path in ["/i.png", "/m.png"] {
            _ = try await fixture.manager.loadImage(with: origin.url(path))
        }
        await fixture.settle()
        for path in ["/i.png", "/m.png"] {
            _ = try await fixture.manager.loadImage(with: origin.url(path), options: .refreshCached)
        }
        #expect(origin.requestCount(for: "/i.png") == 1)
        #expect(origin.requestCount(for: "/m.png") == 2)
        await origin.stop()
    }

    @Test("Heuristic freshness: Last-Modified ten days ago keeps the entry fresh for a day")
    func heuristic() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        let modified = HTTPDate.string(from: Date().addingTimeInterval(-10 * 86_400))
        origin.setRoute("/old.png", Self.route([("Last-Modified", modified)]))
        origin.setRoute("/bare.png", Self.route([]))
        for path in ["/old.png", "/bare.png"] {
            _ = try await fixture.manager.loadImage(with: origin.url(path))
        }
        await fixture.settle()
        fixture.cache.clearMemory()
        for path in ["/old.png", "/bare.png"] {
            #expect(try await fixture.manager.loadImage(with: origin.url(path)).cacheType == .disk)
        }
        #expect(origin.requestCount(for: "/old.png") == 1)
        // Nothing to judge freshness by: revalidated at each use from disk.
        #expect(origin.requestCount(for: "/bare.png") == 2)
        await origin.stop()
    }
}
