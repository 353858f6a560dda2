import Foundation
import Testing
import WebImageHTTP
import WebImageOrigin
import WebImageTestSupport

@Suite("The session's response cache (URLCache)", .timeLimit(.minutes(1)))
struct ResponseCacheTests {
    static func configuration(_ cache: HTTPResponseCache = HTTPResponseCache()) -> HTTPSession.Configuration {
        var configuration = HTTPSession.Configuration.default
        configuration.urlCache = cache
        return configuration
    }

    static func route(_ body: String, _ headers: [(String, String)]) -> OriginRoute {
        OriginRoute(headers: [("Content-Type", "text/plain")] + headers, body: Data(body.utf8))
    }

    /// GET `path` through `session`; the body, and whether the cache answered.
    static func load(
        _ context: HTTPTestContext,
        _ path: String,
        policy: HTTPRequestCachePolicy? = nil,
        headers: HTTPFields = [:]
    ) async throws -> (body: String, status: Int, fromCache: Bool) {
        var request = HTTPSession.Request(url: context.origin.url(path), headers: headers)
        request.cachePolicy = policy
        let delegate = RecordingDelegate()
        let (data, response) = try await context.session.data(for: request, delegate: delegate)
        let metrics = try #require(delegate.metrics.withLock { $0.first })
        #expect(delegate.state.withLock { $0.chunks.reduce(Data(), +) } == data, "the delegate hears the body")
        return (String(decoding: data, as: UTF8.self), response.statusCode, metrics.servedFromCache)
    }

    @Test("A fresh response is served without a request; a stale one is revalidated and a 304 serves the stored body")
    func protocolPolicy() async throws {
        try await HTTPTestContext.with(configuration: Self.configuration()) { context in
            context.origin.setRoute("/fresh", Self.route("fresh body", [("Cache-Control", "max-age=600")]))
            context.origin.setRoute(
                "/etag",
                Self.route("tagged body", [("Cache-Control", "no-cache"), ("ETag", "\"v1\"")])
            )
            context.origin.setRoute("/never", Self.route("secret", [("Cache-Control", "no-store")]))

            #expect(try await Self.load(context, "/fresh") == ("fresh body", 200, false))
            #expect(try await Self.load(context, "/fresh") == ("fresh body", 200, true))
            #expect(context.origin.requestCount(for: "/fresh") == 1)

            #expect(try await Self.load(context, "/etag") == ("tagged body", 200, false))
            #expect(try await Self.load(context, "/etag") == ("tagged body", 200, true))
            let requests = context.origin.requests.filter { $0.path == "/etag" }
            #expect(requests.count == 2 && requests.last?.header("if-none-match") == "\"v1\"")
            #expect(requests.first?.header("if-none-match") == nil)

            // Changed on the server: the 200 replaces the stored response.
            context.origin.setRoute(
                "/etag",
                Self.route("new body", [("Cache-Control", "no-cache"), ("ETag", "\"v2\"")])
            )
            #expect(try await Self.load(context, "/etag") == ("new body", 200, false))
            #expect(try await Self.load(context, "/etag") == ("new body", 200, true))

            _ = try await Self.load(context, "/never")
            #expect(try await Self.load(context, "/never") == ("secret", 200, false))
            #expect(context.origin.requestCount(for: "/never") == 2, "no-store is never stored")
        }
    }

    @Test("Policies: reload ignores the cache, return-cache uses any stored response, don't-load fails without one")
    func policies() async throws {
        try await HTTPTestContext.with(configuration: Self.configuration()) { context in
            context.origin.setRoute("/a", Self.route("a1", [("Cache-Control", "max-age=600")]))
            await #expect {
                try await Self.load(context, "/a", policy: .returnCacheDataDontLoad)
            } throws: { error in
                let error = error as? HTTPSessionError
                return error?.code == .resourceUnavailable && error?.message.contains("/a") == true
            }
            #expect(context.origin.requestCount(for: "/a") == 0)
            _ = try await Self.load(context, "/a")
            context.origin.setRoute("/a", Self.route("a2", [("Cache-Control", "no-cache")]))
            #expect(try await Self.load(context, "/a", policy: .returnCacheDataDontLoad) == ("a1", 200, true))
            #expect(try await Self.load(context, "/a", policy: .returnCacheDataElseLoad) == ("a1", 200, true))
            #expect(try await Self.load(context, "/a", policy: .reloadIgnoringLocalCacheData) == ("a2", 200, false))
            #expect(context.origin.requestCount(for: "/a") == 2)
            // The reload stored its answer (no-cache, no validator): the next use loads again.
            #expect(try await Self.load(context, "/a", policy: .returnCacheDataElseLoad) == ("a2", 200, true))
        }
    }

    @Test("Vary: a stored response answers only requests with the same values of the headers it names")
    func vary() async throws {
        try await HTTPTestContext.with(configuration: Self.configuration()) { context in
            context.origin.setRoute(
                "/v",
                Self.route("hello", [("Cache-Control", "max-age=600"), ("Vary", "Accept-Language")])
            )
            let french: HTTPFields = [.acceptLanguage: "fr"]
            let german: HTTPFields = [.acceptLanguage: "de"]
            _ = try await Self.load(context, "/v", headers: french)
            #expect(try await Self.load(context, "/v", headers: french).fromCache)
            #expect(try await !Self.load(context, "/v", headers: german).fromCache)
            #expect(context.origin.requestCount(for: "/v") == 2)
        }
    }

    @Test("Not stored: answers to requests with credentials unless the response says public, and non-GET requests")
    func notStored() async throws {
        try await HTTPTestContext.with(configuration: Self.configuration()) { context in
            context.origin.setRoute("/mine", Self.route("private data", [("Cache-Control", "max-age=600")]))
            context.origin.setRoute("/shared", Self.route("shared data", [("Cache-Control", "public, max-age=600")]))
            let credentials: HTTPFields = [.authorization: "Bearer token"]
            for path in ["/mine", "/shared"] { _ = try await Self.load(context, path, headers: credentials) }
            #expect(try await !Self.load(context, "/mine", headers: credentials).fromCache)
            #expect(try await Self.load(context, "/shared", headers: credentials).fromCache)

            context.origin.setRoute("/post", Self.route("posted", [("Cache-Control", "max-age=600")]))
            let post = HTTPSession.Request(url: context.origin.url("/post"), method: .post, body: .data(Data("x".utf8)))
            for _ in 0..<2 { _ = try await context.session.data(for: post) }
            #expect(context.origin.requestCount(for: "/post") == 2)
            #expect(try await !Self.load(context, "/post").fromCache, "a POST's answer does not answer a GET")
        }
    }

    /// Declines responses whose body says "skip", and stores the rest in upper case.
    final class CachingDelegate: HTTPSessionTaskDelegate {
        func task(_ task: HTTPSessionTask, willCacheResponse proposed: HTTPCachedResponse) -> HTTPCachedResponse? {
            let text = String(decoding: proposed.data, as: UTF8.self)
            guard text != "skip" else { return nil }
            var changed = proposed
            changed.data = Data(text.uppercased().utf8)
            return changed
        }
    }

    @Test("The delegate's willCacheResponse can decline or change what is stored")
    func willCacheResponse() async throws {
        try await HTTPTestContext.with(configuration: Self.configuration()) { context in
            context.origin.setRoute("/skip", Self.route("skip", [("Cache-Control", "max-age=600")]))
            context.origin.setRoute("/up", Self.route("quiet", [("Cache-Control", "max-age=600")]))
            for path in ["/skip", "/up"] {
                let request = HTTPSession.Request(url: context.origin.url(path))
                _ = try await context.session.data(for: request, delegate: CachingDelegate())
            }
            #expect(try await Self.load(context, "/skip") == ("skip", 200, false), "declined: not stored")
            #expect(try await Self.load(context, "/up") == ("QUIET", 200, true), "stored as the delegate changed it")
        }
    }

    @Test("The least recently used response leaves first past the capacity; one over a twentieth is not kept")
    func capacity() async throws {
        let cache = HTTPResponseCache(memoryCapacity: 20_000)
        func stored(_ path: String) async -> Bool { await cache.cachedResponse(for: Self.request(path)) != nil }
        cache.storeCachedResponse(Self.response("big", 1_001), for: Self.request("big"))
        #expect(await !stored("big"))
        #expect(cache.currentMemoryUsage == 0)
        for index in 0..<25 { cache.storeCachedResponse(Self.response("\(index)", 900), for: Self.request("\(index)")) }
        #expect(cache.currentMemoryUsage <= 20_000)
        #expect(await !stored("0"), "the oldest left")
        #expect(await stored("24"))
        #expect(await stored("10"))  // used: now the most recent
        for index in 25..<40 {
            cache.storeCachedResponse(Self.response("\(index)", 900), for: Self.request("\(index)"))
        }
        #expect(await stored("10"))
        #expect(await !stored("11"))
        var post = Self.request("24")
        post.method = .post
        #expect(await cache.cachedResponse(for: post) == nil, "only GET")
        cache.removeAllCachedResponses()
        #expect(await !stored("24"))
        #expect(cache.currentMemoryUsage == 0)
    }

    @Test("On disk: a response outlives the cache object, files stay within the disk capacity, removal reaches them")
    func disk() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let directory = folder.url.appendingPathComponent("responses")
        var headers = HTTPFields()
        headers[.contentType] = "text/plain"
        headers[.eTag] = "\"v9\""
        let first = HTTPResponseCache(memoryCapacity: 100_000, diskCapacity: 200_000, directory: directory)
        let original = HTTPCachedResponse(
            response: .init(url: Self.request("kept").url, statusCode: 200, headers: headers, httpVersion: "HTTP/2"),
            data: Data("kept on disk".utf8),
            varyingHeaders: ["accept-language": "fr"]
        )
        first.storeCachedResponse(original, for: Self.request("kept"))
        #expect(await first.currentDiskUsage() > 0)

        // A new cache on the same folder: nothing in memory, the file answers.
        let second = HTTPResponseCache(memoryCapacity: 100_000, diskCapacity: 200_000, directory: directory)
        let french: HTTPFields = [.acceptLanguage: "fr"]
        let reread = try #require(await second.cachedResponse(for: Self.request("kept"), headers: french))
        #expect(reread.data == original.data && reread.response == original.response)
        #expect(abs(reread.storedDate.timeIntervalSince(original.storedDate)) < 0.001)
        #expect(await second.cachedResponse(for: Self.request("kept"), headers: [.acceptLanguage: "de"]) == nil)
        #expect(second.currentMemoryUsage > 0, "a disk hit is kept in memory too")

        for index in 0..<40 {
            second.storeCachedResponse(Self.response("\(index)", 9_000), for: Self.request("\(index)"))
        }
        #expect(await second.currentDiskUsage() <= 200_000)
        second.removeAllCachedResponses()
        #expect(await second.currentDiskUsage() == 0)
        let third = HTTPResponseCache(memoryCapacity: 100_000, diskCapacity: 200_000, directory: directory)
        #expect(await third.cachedResponse(for: Self.request("kept"), headers: french) == nil)

        // A damaged file is a miss, not a crash.
        third.storeCachedResponse(original, for: Self.request("kept"))
        _ = await third.currentDiskUsage()
        for file in try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil) {
            try Data("WIRC1\n\u{7f}garbage".utf8).write(to: file)
        }
        let fourth = HTTPResponseCache(memoryCapacity: 100_000, diskCapacity: 200_000, directory: directory)
        #expect(await fourth.cachedResponse(for: Self.request("kept"), headers: french) == nil)
    }

    static func request(_ path: String) -> HTTPSession.Request {
        .init(url: URL(string: "http://127.0.0.1:9/\(path)")!)
    }

    static func response(_ path: String, _ size: Int) -> HTTPCachedResponse {
        HTTPCachedResponse(
            response: .init(url: request(path).url, statusCode: 200, headers: [:]),
            data: Data(repeating: 1, count: size)
        )
    }
}
