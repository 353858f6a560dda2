import Foundation
import Testing
import WebImageHTTP
import WebImageOrigin
import WebImageTestSupport

@Suite("TLS and SecurityPolicy", .timeLimit(.minutes(1)))
struct SecurityPolicyTests {
    static func session(_ policy: SecurityPolicy, http2: Bool = false) -> HTTPSession {
        var configuration = HTTPSession.Configuration()
        configuration.securityPolicy = policy
        configuration.httpVersion = http2 ? .automatic : .http1Only
        return HTTPSession(configuration: configuration)
    }

    static func load(_ session: HTTPSession, _ url: URL) async -> Result<String, HTTPSessionError> {
        let result: Result<String, HTTPSessionError>
        do {
            result = .success(try await session.get(url.absoluteString, serializer: .string).1)
        } catch {
            result = .failure(error)
        }
        try? await session.shutdown()
        return result
    }

    static func start(_ identity: TestIdentity, http2: Bool = false) async throws -> OriginServer {
        let origin = try await OriginServer.start(
            tls: .init(certificatePEM: identity.certificatePEM, privateKeyPEM: identity.privateKeyPEM, http2: http2)
        )
        origin.setRoute("/secret", .data(Data("tls ok".utf8), contentType: "text/plain"))
        return origin
    }

    @Test("A self-signed certificate is rejected by default with a clear error")
    func rejectedByDefault() async throws {
        let origin = try await Self.start(try TestCertificates.selfSigned())
        let result = await Self.load(Self.session(.default), origin.url("/secret"))
        guard case .failure(let error) = result else {
            Issue.record("an untrusted certificate was accepted")
            return await origin.stop()
        }
        #expect(error.code == .serverCertificateUntrusted)
        #expect(error.message.contains("127.0.0.1"))
        await origin.stop()
    }

    @Test("allowInvalidCertificates accepts it")
    func allowInvalid() async throws {
        let origin = try await Self.start(try TestCertificates.selfSigned())
        let result = await Self.load(
            Self.session(SecurityPolicy(allowInvalidCertificates: true)),
            origin.url("/secret")
        )
        #expect(try result.get() == "tls ok")
        await origin.stop()
    }

    @Test("The right pin is accepted; a wrong pin is rejected")
    func pinning() async throws {
        let identity = try TestCertificates.selfSigned()
        let origin = try await Self.start(identity)
        let pinned = await Self.load(
            Self.session(.pinning(certificates: [identity.certificateDER])),
            origin.url("/secret")
        )
        #expect(try pinned.get() == "tls ok")

        let other = try TestCertificates.selfSigned()
        let wrong = await Self.load(Self.session(.pinning(certificates: [other.certificateDER])), origin.url("/secret"))
        if case .failure(let error) = wrong {
            #expect(error.code == .serverCertificateUntrusted)
        } else {
            Issue.record("a pin mismatch was accepted")
        }
        await origin.stop()
    }

    @Test("A CA-issued server certificate can be pinned (AFNetworking's usual pin): trusted as it stands")
    func pinnedServerCertificate() async throws {
        let authority = try TestCertificates.selfSigned(commonName: "swift-web-image test CA")
        let server = try TestCertificates.issued(by: authority)
        let origin = try await Self.start(server)
        let url = origin.url("/secret")
        // The CA is in no trust store: the pin alone makes the server trusted, by address and by name.
        #expect(
            try await Self.load(Self.session(.pinning(certificates: [server.certificateDER])), url).get() == "tls ok"
        )
        var byName = URLComponents(url: url, resolvingAgainstBaseURL: false)!
        byName.host = "localhost"
        #expect(
            try await Self.load(Self.session(.pinning(certificates: [server.certificateDER])), byName.url!).get()
                == "tls ok"
        )
        // Pinning the CA instead trusts every certificate it issued (the handshake's chain check).
        #expect(
            try await Self.load(Self.session(.pinning(certificates: [authority.certificateDER])), url).get() == "tls ok"
        )
        // Another certificate of the same CA is not the pinned one.
        let sibling = try TestCertificates.issued(by: authority)
        let refused = await Self.load(Self.session(.pinning(certificates: [sibling.certificateDER])), url)
        #expect(throws: HTTPSessionError.self) { try refused.get() }
        if case .failure(let error) = refused {
            #expect(error.code == .serverCertificateUntrusted)
            #expect(error.message.contains("does not match any pinned certificate"), "\(error.message)")
        }
        #expect(origin.requestCount(for: "/secret") == 3, "no request was sent on a refused connection")
        // A pinned server certificate beside the CA: the CA's direct issue is still trusted.
        let mixed = SecurityPolicy.pinning(certificates: [sibling.certificateDER, authority.certificateDER])
        #expect(try await Self.load(Self.session(mixed), url).get() == "tls ok")
        await origin.stop()
    }

    @Test("Pinning the intermediate CA that issued the server's certificate, the root untrusted")
    func pinnedIntermediate() async throws {
        let root = try TestCertificates.selfSigned(commonName: "swift-web-image test root")
        let intermediate = try TestCertificates.issued(
            by: root,
            commonName: "swift-web-image test intermediate",
            isAuthority: true
        )
        let server = try TestCertificates.issued(by: intermediate)
        let origin = try await Self.start(server)
        let url = origin.url("/secret")
        #expect(
            try await Self.load(Self.session(.pinning(certificates: [intermediate.certificateDER])), url).get()
                == "tls ok"
        )
        // Another intermediate of the same root did not issue it.
        let other = try TestCertificates.issued(by: root, commonName: "another intermediate", isAuthority: true)
        let refused = await Self.load(Self.session(.pinning(certificates: [other.certificateDER])), url)
        if case .success = refused { Issue.record("a certificate issued by another intermediate was accepted") }
        await origin.stop()
    }

    @Test("A pinned server certificate still has to name the host and be within its dates")
    func pinnedServerCertificateChecks() async throws {
        let authority = try TestCertificates.selfSigned(commonName: "swift-web-image test CA")
        let elsewhere = try TestCertificates.issued(by: authority, hosts: ["images.example.com"])
        let origin = try await Self.start(elsewhere)
        let wrongHost = await Self.load(
            Self.session(.pinning(certificates: [elsewhere.certificateDER])),
            origin.url("/secret")
        )
        if case .failure(let error) = wrongHost {
            #expect(error.code == .serverCertificateUntrusted && error.message.contains("wrong host"), "\(error)")
        } else {
            Issue.record("a pinned certificate for another host was accepted")
        }
        let lenient = await Self.load(
            Self.session(.pinning(certificates: [elsewhere.certificateDER], validatesDomainName: false)),
            origin.url("/secret")
        )
        #expect(try lenient.get() == "tls ok")
        await origin.stop()

        let expired = try TestCertificates.issued(by: authority, validity: -3600)
        let expiredOrigin = try await Self.start(expired)
        let result = await Self.load(
            Self.session(.pinning(certificates: [expired.certificateDER])),
            expiredOrigin.url("/secret")
        )
        if case .failure(let error) = result {
            #expect(error.message.contains("expired"), "\(error)")
        } else {
            Issue.record("an expired pinned certificate was accepted")
        }
        // allowInvalidCertificates waives the dates and the host, never the pin.
        var permissive = SecurityPolicy.pinning(certificates: [expired.certificateDER])
        permissive.allowInvalidCertificates = true
        #expect(try await Self.load(Self.session(permissive), expiredOrigin.url("/secret")).get() == "tls ok")
        permissive.pinnedCertificates = [try TestCertificates.issued(by: authority).certificateDER]
        if case .success = await Self.load(Self.session(permissive), expiredOrigin.url("/secret")) {
            Issue.record("allowInvalidCertificates dropped the pin")
        }
        await expiredOrigin.stop()
    }

    @Test("Public-key pinning: the right key is accepted, another key rejected, the chain still checked")
    func publicKeyPinning() async throws {
        let identity = try TestCertificates.selfSigned()
        let origin = try await Self.start(identity)
        let url = origin.url("/secret")
        let right = await Self.load(
            Self.session(.pinning(publicKeysOf: [identity.certificateDER], allowInvalidCertificates: true)),
            url
        )
        #expect(try right.get() == "tls ok")

        let other = try TestCertificates.selfSigned()
        let wrong = await Self.load(
            Self.session(.pinning(publicKeysOf: [other.certificateDER], allowInvalidCertificates: true)),
            url
        )
        if case .failure(let error) = wrong {
            #expect(error.code == .serverCertificateUntrusted && error.message.contains("public key"))
        } else {
            Issue.record("a public-key pin mismatch was accepted")
        }
        // Without allowInvalidCertificates the self-signed chain fails first, pin or not.
        let strict = await Self.load(Self.session(.pinning(publicKeysOf: [identity.certificateDER])), url)
        if case .success = strict { Issue.record("an untrusted chain passed because its key was pinned") }
        #expect(origin.requestCount(for: "/secret") == 1, "no request was sent on a rejected connection")
        await origin.stop()
    }

    @Test("A pin does not excuse a wrong host name unless domain validation is off")
    func hostName() async throws {
        let identity = try TestCertificates.selfSigned(hosts: ["images.example.com"])
        let origin = try await Self.start(identity)
        let strict = await Self.load(
            Self.session(.pinning(certificates: [identity.certificateDER])),
            origin.url("/secret")
        )
        if case .success = strict { Issue.record("a certificate for another host was accepted") }
        let lenient = await Self.load(
            Self.session(.pinning(certificates: [identity.certificateDER], validatesDomainName: false)),
            origin.url("/secret")
        )
        #expect(try lenient.get() == "tls ok")
        await origin.stop()
    }

    @Test("An expired certificate is rejected even when pinned")
    func expired() async throws {
        let identity = try TestCertificates.selfSigned(validity: -3600)
        let origin = try await Self.start(identity)
        let result = await Self.load(
            Self.session(.pinning(certificates: [identity.certificateDER])),
            origin.url("/secret")
        )
        if case .success = result { Issue.record("an expired certificate was accepted") }
        await origin.stop()
    }

    @Test("Pinned certificates load from PEM and DER files")
    func certificateFiles() throws {
        let identity = try TestCertificates.selfSigned()
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try Data(identity.certificatePEM.utf8).write(to: directory.file("cert.pem"))
        try identity.certificateDER.write(to: directory.file("cert.der"))
        #expect(try SecurityPolicy.certificate(contentsOf: directory.file("cert.pem")) == identity.certificateDER)
        #expect(try SecurityPolicy.certificate(contentsOf: directory.file("cert.der")) == identity.certificateDER)
    }

    @Test("HTTP/2 over TLS")
    func http2() async throws {
        let identity = try TestCertificates.selfSigned()
        let origin = try await Self.start(identity, http2: true)
        let session = Self.session(.pinning(certificates: [identity.certificateDER]), http2: true)
        let (response, text) = try await session.get(origin.url("/secret").absoluteString, serializer: .string)
        #expect(text == "tls ok")
        #expect(response.httpVersion == "HTTP/2")
        try await session.shutdown()
        await origin.stop()
    }
}
