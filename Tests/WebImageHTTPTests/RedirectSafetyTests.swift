import Foundation
import Testing
import WebImageHTTP
import WebImageOrigin
import WebImageTestSupport

/// URLs and redirects that must never reach a socket, downgrade, or carry secrets elsewhere.
@Suite("Redirect and URL safety", .timeLimit(.minutes(1)))
struct RedirectSafetyTests {
    static func failure(_ session: HTTPSession, _ url: URL) async -> HTTPSessionError? {
        do {
            _ = try await session.data(for: HTTPSession.Request(url: url))
            return nil
        } catch {
            return error
        }
    }

    @Test("A port over 65535, or too long for a number, is invalidURL (no trap, no silent port 80)")
    func badPorts() async throws {
        let context = try await HTTPTestContext.make()
        for text in [
            "http://127.0.0.1:70000/a.png", "http://127.0.0.1:99999999999999999999999/a", "http://127.0.0.1:0/a",
        ] {
            let url = try #require(URL(string: text))
            #expect(url.httpValidationFailure != nil, "\(text)")
            let error = await Self.failure(context.session, url)
            #expect(error?.code == .invalidURL, "\(text)")
            #expect(error?.message.contains("port") == true)
        }
        #expect(URL(string: "http://[::1]:8080/a")?.httpValidationFailure == nil)
        #expect(URL(string: "http://user:pa:ss@127.0.0.1:8080/a")?.httpValidationFailure == nil)
        for valid in ["http://[::1]/a", "http://127.0.0.1:/a", "http://xn--bcher-kva.example:8080/b?c=d:1#e:2"] {
            #expect(URL(string: valid)?.httpValidationFailure == nil, "\(valid)")
        }
        for invalid in ["http://[::1]:99999/a", "https://u@127.0.0.1:65536?q"] {
            #expect(URL(string: invalid)?.httpValidationFailure?.contains("port") == true, "\(invalid)")
        }
        #expect(URL(string: "HTTPS://Example.COM:8443/a")?.httpValidationFailure == nil)
        for noHost in ["http:/a", "http://u@/a", "http://:80/a", "http://[]/a"] {
            #expect(URL(string: noHost)?.httpValidationFailure == "no host", "\(noHost)")
        }
        for other in ["ftp://127.0.0.1/a", "httpx://127.0.0.1/a", "file:///tmp/a", "a/b"] {
            #expect(URL(string: other)?.httpValidationFailure == "not an http or https URL", "\(other)")
        }
        await context.finish()
    }

    @Test("A redirect to a bad port or to a non-http URL fails with redirectRefused naming the target")
    func refusedTargets() async throws {
        let context = try await HTTPTestContext.make()
        context.origin.setRoute("/port", .redirect(to: "http://127.0.0.1:70000/x.png"))
        context.origin.setRoute("/file", .redirect(to: "file:///etc/passwd"))
        for (path, target) in [("/port", "127.0.0.1:70000"), ("/file", "file:///etc/passwd")] {
            let error = await Self.failure(context.session, context.origin.url(path))
            #expect(error?.code == .redirectRefused, "\(path)")
            #expect(error?.message.contains(target) == true, "\(error?.message ?? "")")
        }
        await context.finish()
    }

    @Test("https -> http is refused by default and followed only when allowed")
    func downgrade() async throws {
        let identity = try TestCertificates.selfSigned()
        let secure = try await OriginServer.start(
            tls: .init(certificatePEM: identity.certificatePEM, privateKeyPEM: identity.privateKeyPEM)
        )
        let plain = try await OriginServer.start()
        plain.setRoute("/image", .data(Data("plain".utf8), contentType: "text/plain"))
        secure.setRoute("/down", .redirect(to: plain.url("/image").absoluteString))
        var configuration = HTTPSession.Configuration()
        configuration.securityPolicy = .pinning(certificates: [identity.certificateDER])
        let strict = HTTPSession(configuration: configuration)
        let error = await Self.failure(strict, secure.url("/down"))
        #expect(error?.code == .redirectRefused)
        #expect(error?.message.contains("plain http") == true)
        #expect(plain.requestCount(for: "/image") == 0)
        configuration.redirectPolicy.allowsInsecureRedirects = true
        let lenient = HTTPSession(configuration: configuration)
        let (data, _) = try await lenient.data(for: HTTPSession.Request(url: secure.url("/down")))
        #expect(String(decoding: data, as: UTF8.self) == "plain")
        try await strict.shutdown()
        try await lenient.shutdown()
        await secure.stop()
        await plain.stop()
    }

    @Test("Across origins only safe headers follow a redirect; the same origin keeps them")
    func crossOriginHeaders() async throws {
        let context = try await HTTPTestContext.make()
        let other = try await OriginServer.start()
        other.setRoute("/landing", .data(Data("x".utf8), contentType: "text/plain"))
        context.origin.setRoute("/landing", .data(Data("x".utf8), contentType: "text/plain"))
        context.origin.setRoute("/away", .redirect(to: other.url("/landing").absoluteString))
        context.origin.setRoute("/home", .redirect(to: "/landing"))
        var request = HTTPSession.Request(url: context.origin.url("/away"))
        request.headers[HTTPField.Name("X-Api-Key")!] = "secret-key"
        request.headers[.authorization] = "Bearer secret"
        request.headers[.proxyAuthorization] = "Basic c2VjcmV0"
        request.headers[.cookie] = "session=secret"
        request.headers[.accept] = "image/png"
        _ = try await context.session.data(for: request)
        let received = try #require(other.requests.first { $0.path == "/landing" })
        for name in ["x-api-key", "authorization", "proxy-authorization", "cookie"] {
            #expect(received.header(name) == nil, "\(name) crossed origins")
        }
        #expect(received.header("accept") == "image/png")

        request.url = context.origin.url("/home")
        _ = try await context.session.data(for: request)
        let same = try #require(context.origin.requests.last { $0.path == "/landing" })
        #expect(same.header("x-api-key") == "secret-key")
        #expect(same.header("authorization") == "Bearer secret")
        await other.stop()
        await context.finish()
    }

    @Test("A 304 that declares a Content-Length has no body: revalidation succeeds")
    func notModifiedWithLength() async throws {
        let server = try RawHTTPServer(
            response: Data("HTTP/1.1 304 Not Modified\r\nETag: \"v1\"\r\nContent-Length: 5000\r\n\r\n".utf8)
        )
        defer { server.stop() }
        let session = HTTPSession()
        var request = HTTPSession.Request(url: server.url("/img"))
        request.headers[.ifNoneMatch] = "\"v1\""
        let result: Result<(Data, HTTPSession.Response), HTTPSessionError>
        do { result = .success(try await session.data(for: request)) } catch { result = .failure(error) }
        try? await session.shutdown()
        let (data, response) = try result.get()
        #expect(response.statusCode == 304)
        #expect(response.headers[.contentLength] == "5000")
        #expect(data.isEmpty)
    }

    @Test("connectionValidator judges the address connected to: a refusal writes no request, over http and https")
    func connectionValidator() async throws {
        let identity = try TestCertificates.selfSigned()
        let plain = try await OriginServer.start()
        let secure = try await OriginServer.start(
            tls: .init(certificatePEM: identity.certificatePEM, privateKeyPEM: identity.privateKeyPEM)
        )
        for origin in [plain, secure] { origin.setRoute("/a", .data(Data("a".utf8), contentType: "text/plain")) }
        let asked = Locked<[String]>([])
        var configuration = HTTPSession.Configuration()
        configuration.securityPolicy = .pinning(certificates: [identity.certificateDER])
        configuration.connectionValidator = { address in
            asked.withLock { $0.append(address) }
            return address == "127.0.0.1" ? "loopback is off limits" : nil
        }
        let refusing = HTTPSession(configuration: configuration)
        for origin in [plain, secure] {
            // Twice: a refused connection is not kept for the next request either.
            for _ in 0..<2 {
                let error = await Self.failure(refusing, origin.url("/a"))
                #expect(error?.code == .connectionNotAllowed)
                #expect(error?.message.contains("127.0.0.1 is not allowed: loopback is off limits") == true)
            }
            #expect(origin.requestCount(for: "/a") == 0)
        }
        #expect(asked.value.count == 4 && asked.value.allSatisfy { $0 == "127.0.0.1" }, "\(asked.value)")
        configuration.connectionValidator = { _ in nil }
        let allowing = HTTPSession(configuration: configuration)
        for origin in [plain, secure] {
            let (data, _) = try await allowing.data(for: HTTPSession.Request(url: origin.url("/a")))
            #expect(data == Data("a".utf8))
        }
        try await refusing.shutdown()
        try await allowing.shutdown()
        await plain.stop()
        await secure.stop()
    }
}
