import Foundation
import Testing
import WebImageHTTP
import WebImageOrigin
import WebImageTestSupport

@Suite("HTTP proxies", .timeLimit(.minutes(1)))
struct ProxyTests {
    typealias Rules = HTTPSession.Configuration.ProxyRules
    typealias Proxy = HTTPSession.Configuration.Proxy

    @Test("Proxy URLs parse as curl takes them; anything else is an error naming the source")
    func parsing() throws {
        #expect(try Proxy(parsing: "http://proxy.test:3128", source: "x") == Proxy(host: "proxy.test", port: 3128))
        #expect(try Proxy(parsing: "proxy.test", source: "x") == Proxy(host: "proxy.test", port: 1080))
        #expect(try Proxy(parsing: " [::1]:8080 ", source: "x") == Proxy(host: "::1", port: 8080))
        let credential = try Proxy(parsing: "http://me:p%40ss@127.0.0.1:9", source: "x").credential
        #expect(credential == HTTPCredential(user: "me", password: "p@ss"))
        for (bad, reason) in [
            ("socks5://127.0.0.1:1080", "only http:// proxies"), ("http://", "not a proxy URL"),
            ("http://host:0", "port must be 1 to 65535"),
        ] {
            #expect {
                try Proxy(parsing: bad, source: "HTTPS_PROXY")
            } throws: { error in
                let message = (error as? HTTPSessionError)?.message ?? ""
                return message.contains("HTTPS_PROXY '\(bad)'") && message.contains(reason)
            }
        }
    }

    @Test("The environment: lower case wins, all_proxy fills in, no_proxy lists direct hosts")
    func environment() throws {
        #expect(try Rules.environment([:]) == nil)
        #expect(try Rules.environment(["NO_PROXY": "*"]) == nil, "no proxy named")
        let rules = try #require(
            try Rules.environment([
                "HTTP_PROXY": "http://upper:1", "http_proxy": "http://lower:2", "ALL_PROXY": "all:3",
                "no_proxy": " Example.com, .internal.test ,10.0.0.1,[::1]",
            ])
        )
        #expect(rules.http == Proxy(host: "lower", port: 2))
        #expect(rules.https == Proxy(host: "all", port: 3))
        func route(_ url: String) -> Proxy? { rules.proxy(for: URL(string: url)!) }
        #expect(route("http://img.test/a.png") == Proxy(host: "lower", port: 2))
        #expect(route("https://img.test/a.png") == Proxy(host: "all", port: 3))
        for direct in [
            "http://example.com/", "https://cdn.EXAMPLE.com/x", "http://a.internal.test/", "http://internal.test/",
            "http://10.0.0.1/", "http://[::1]:8080/",
        ] {
            #expect(route(direct) == nil, "\(direct) bypasses the proxy")
        }
        #expect(route("http://notexample.com/") != nil, "a suffix must start at a dot")
        #expect(route("http://10.0.0.12/") != nil)
        let upper = try Rules.environment(["HTTPS_PROXY": "http://p:1", "NO_PROXY": "a.test"])
        #expect(upper?.https == Proxy(host: "p", port: 1) && upper?.bypass == ["a.test"])
        #expect(
            try Rules.environment(["https_proxy": "", "HTTPS_PROXY": "http://p:1"]) == nil,
            "empty lower case wins"
        )
        #expect(
            try Rules.environment(["https_proxy": "http://p:1", "no_proxy": "*"])?.proxy(
                for: URL(string: "https://a.b")!
            ) == nil
        )
        #expect {
            try Rules.environment(["https_proxy": "ftp://p"])
        } throws: { ($0 as? HTTPSessionError)?.message.contains("https_proxy 'ftp://p'") == true }
    }

    @Test("Requests go through the proxy their rules name, HTTP and HTTPS alike; bypassed hosts go direct")
    func routing() async throws {
        let proxy = try await ConnectProxyServer.start()
        let origin = try await OriginServer.start()
        origin.setRoute("/a.txt", .data(Data("plain".utf8), contentType: "text/plain"))
        let identity = try TestCertificates.selfSigned()
        let tlsOrigin = try await OriginServer.start(
            tls: .init(certificatePEM: identity.certificatePEM, privateKeyPEM: identity.privateKeyPEM)
        )
        tlsOrigin.setRoute("/b.txt", .data(Data("secure".utf8), contentType: "text/plain"))
        let server = Proxy(host: "127.0.0.1", port: proxy.port)
        var configuration = HTTPSession.Configuration()
        configuration.securityPolicy = SecurityPolicy(allowInvalidCertificates: true)
        configuration.proxyRules = Rules(http: server, https: server)
        let session = HTTPSession(configuration: configuration)
        #expect(try await session.get(origin.url("/a.txt").absoluteString, serializer: .string).1 == "plain")
        #expect(try await session.get(tlsOrigin.url("/b.txt").absoluteString, serializer: .string).1 == "secure")
        #expect(proxy.tunnels.map(\.target) == ["127.0.0.1:\(origin.port)", "127.0.0.1:\(tlsOrigin.port)"])
        #expect(origin.requests.count == 1 && tlsOrigin.requests.count == 1)
        try await session.shutdown()

        // Bypassed: the proxy sees nothing more.
        configuration.proxyRules?.bypass = ["127.0.0.1"]
        let direct = HTTPSession(configuration: configuration)
        #expect(try await direct.get(origin.url("/a.txt").absoluteString, serializer: .string).1 == "plain")
        #expect(proxy.tunnels.count == 2)
        try await direct.shutdown()
        await proxy.stop()
        await origin.stop()
        await tlsOrigin.stop()
    }

    @Test("A proxy's credential is sent; a proxy refusing the request fails it with the status")
    func credentials() async throws {
        let token = "Basic " + Data("me:secret".utf8).base64EncodedString()
        let proxy = try await ConnectProxyServer.start(requiredAuthorization: token)
        let origin = try await OriginServer.start()
        origin.setRoute("/a.txt", .data(Data("plain".utf8), contentType: "text/plain"))
        var configuration = HTTPSession.Configuration()
        configuration.proxy = Proxy(
            host: "127.0.0.1",
            port: proxy.port,
            credential: .init(user: "me", password: "secret")
        )
        let session = HTTPSession(configuration: configuration)
        #expect(try await session.get(origin.url("/a.txt").absoluteString, serializer: .string).1 == "plain")
        #expect(proxy.tunnels.last?.authorization == token)
        try await session.shutdown()

        configuration.proxy?.credential = .init(user: "me", password: "wrong")
        let refused = HTTPSession(configuration: configuration)
        do {
            _ = try await refused.get(origin.url("/a.txt").absoluteString, serializer: .string)
            Issue.record("the proxy refused, yet the load succeeded")
        } catch {
            #expect(error.message.lowercased().contains("proxy"), "\(error.message)")
        }
        #expect(origin.requests.count == 1, "the refused request never reached the origin")
        try await refused.shutdown()
        await proxy.stop()
        await origin.stop()
    }
}
