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
    func capacity() throws {
        let cache = HTTPResponseCache(memoryCapacity: 20_000)
        func request(_ path: String) -> HTTPSession.Request { .init(url: URL(string: "http://127.0.0.1:9/\(path)")!) }
        func response(_ path: String, _ size: Int) -> HTTPCachedResponse {
            HTTPCachedResponse(
                response: .init(url: request(path).url, statusCode: 200, headers: [:]),
                data: Data(repeating: 1, count: size)
            )
        }
        cache.storeCachedResponse(response("big", 1_001), for: request("big"))
        #expect(cache.cachedResponse(for: request("big")) == nil && cache.currentMemoryUsage == 0)
        for index in 0..<25 { cache.storeCachedResponse(response("\(index)", 900), for: request("\(index)")) }
        #expect(cache.currentMemoryUsage <= 20_000)
        #expect(cache.cachedResponse(for: request("0")) == nil, "the oldest left")
        #expect(cache.cachedResponse(for: request("24")) != nil)
        _ = cache.cachedResponse(for: request("10"))  // used: now the most recent
        for index in 25..<40 { cache.storeCachedResponse(response("\(index)", 900), for: request("\(index)")) }
        #expect(cache.cachedResponse(for: request("10")) != nil && cache.cachedResponse(for: request("11")) == nil)
        var post = request("24")
        post.method = .post
        #expect(cache.cachedResponse(for: post) == nil, "only GET")
        cache.removeAllCachedResponses()
        #expect(cache.currentMemoryUsage == 0 && cache.cachedResponse(for: request("24")) == nil)
    }
}
