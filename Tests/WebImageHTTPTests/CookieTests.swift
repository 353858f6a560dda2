import Foundation
import Testing
import WebImageHTTP
import WebImageOrigin

@Suite("Cookies", .timeLimit(.minutes(1)))
struct CookieTests {
    @Test("Cookies round trip through a server when a store is configured, and not otherwise")
    func roundTrip() async throws {
        var configuration = HTTPSession.Configuration()
        configuration.cookieStore = HTTPCookieStore()
        let context = try await HTTPTestContext.make(configuration: configuration)
        context.origin.setRoute(
            "/login",
            OriginRoute(headers: [
                ("Set-Cookie", "session=abc123; Path=/; HttpOnly"), ("Set-Cookie", "theme=dark"),
                ("Set-Cookie", "scoped=1; Path=/admin"), ("Set-Cookie", "secure=1; Secure"),
            ])
        )
        _ = try await context.session.get(context.origin.url("/login").absoluteString, serializer: .data)
        let (_, echoed) = try await context.session.get(context.origin.url("/echo").absoluteString, serializer: .data)
        let headers = try HTTPTestContext.echo(echoed)["headers"] as? [String: String]
        #expect(headers?["cookie"] == "session=abc123; theme=dark")

        var optOut = HTTPSession.Request(url: context.origin.url("/echo"))
        optOut.handlesCookies = false
        let (data, _) = try await context.session.data(for: optOut)
        #expect((try HTTPTestContext.echo(data)["headers"] as? [String: String])?["cookie"] == nil)

        let plain = HTTPSession()
        let (plainEcho, _) = try await plain.data(for: .init(url: context.origin.url("/echo")))
        #expect((try HTTPTestContext.echo(plainEcho)["headers"] as? [String: String])?["cookie"] == nil)
        try await plain.shutdown()
        await context.finish()
    }

    @Test("Domain, path, secure and expiry rules")
    func rules() throws {
        let store = HTTPCookieStore()
        let page = try #require(URL(string: "https://www.example.com/docs/page.html"))
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        store.store(
            setCookieHeaders: [
                "host=1", "wide=2; Domain=example.com", "foreign=3; Domain=other.com", "tld=4; Domain=com",
                "deep=5; Path=/docs/api", "secure=6; Secure", "old=7; Expires=Wed, 21 Oct 2015 07:28:00 GMT",
                "soon=8; Max-Age=60", "gone=9; Max-Age=0",
            ],
            from: page,
            now: now
        )
        let names = { (url: String, at: Date) in store.cookies(for: URL(string: url)!, now: at).map(\.name).sorted() }
        #expect(names("https://www.example.com/docs/x", now) == ["host", "secure", "soon", "wide"])
        #expect(names("https://www.example.com/docs/api/v1", now) == ["deep", "host", "secure", "soon", "wide"])
        #expect(names("https://api.example.com/docs/", now) == ["wide"])
        #expect(names("http://www.example.com/docs/x", now) == ["host", "soon", "wide"])
        #expect(names("https://www.example.com/other", now).isEmpty)  // every default path here is /docs
        #expect(names("https://www.example.com/docs/x", now.addingTimeInterval(120)) == ["host", "secure", "wide"])
        // Max-Age=0 deletes an existing cookie.
        store.store(setCookieHeaders: ["host=gone; Max-Age=0"], from: page, now: now)
        #expect(!names("https://www.example.com/docs/x", now).contains("host"))
        #expect(
            store.cookieHeader(for: URL(string: "https://www.example.com/docs/api/x")!)?.hasPrefix("deep=5") == true
        )
    }

    @Test(
        "Empty and bare '=' attributes are skipped, not a crash (a fuzzing regression)",
        arguments: ["a=b; =", "a=b;=x", "a=b; ;", "a=b; = ; Secure", "a=b;;;=;=;Path=/"]
    )
    func malformedAttributes(header: String) {
        let store = HTTPCookieStore()
        let url = URL(string: "https://example.com/p")!
        store.store(setCookieHeaders: [header], from: url)
        #expect(store.cookieHeader(for: url) == "a=b")
    }
}
