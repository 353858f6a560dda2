import Foundation
import Testing
import WebImageHTTP
import WebImageOrigin
import WebImageTestSupport

/// Pins hold even when chain validation is relaxed, old TLS versions are refused, and pinned
/// certificate files must be certificates.
@Suite("TLS hardening", .timeLimit(.minutes(1)))
struct TLSHardeningTests {
    @Test("allowInvalidCertificates relaxes the chain, not the pins: another server's certificate is refused")
    func pinsSurviveAllowInvalid() async throws {
        let served = try TestCertificates.selfSigned()
        let other = try TestCertificates.selfSigned()
        let origin = try await SecurityPolicyTests.start(served)
        // Pinned to another certificate, invalid certificates allowed: still refused
        var wrongPin = SecurityPolicy.pinning(certificates: [other.certificateDER])
        wrongPin.allowInvalidCertificates = true
        let refused = await SecurityPolicyTests.load(SecurityPolicyTests.session(wrongPin), origin.url("/secret"))
        guard case .failure(let error) = refused else {
            Issue.record("a certificate that is not pinned was accepted with allowInvalidCertificates")
            return await origin.stop()
        }
        #expect(error.code == .serverCertificateUntrusted)
        #expect(error.message.contains("pinned"))
        // The right pin with invalid certificates allowed works
        var rightPin = SecurityPolicy.pinning(certificates: [served.certificateDER])
        rightPin.allowInvalidCertificates = true
        let accepted = await SecurityPolicyTests.load(SecurityPolicyTests.session(rightPin), origin.url("/secret"))
        #expect(try accepted.get() == "tls ok")
        // Public-key pins likewise
        let keyRefused = await SecurityPolicyTests.load(
            SecurityPolicyTests.session(.pinning(publicKeysOf: [other.certificateDER], allowInvalidCertificates: true)),
            origin.url("/secret")
        )
        #expect(throws: HTTPSessionError.self) { try keyRefused.get() }
        await origin.stop()
    }

    @Test("A server that only speaks TLS 1.0/1.1 is refused with words, even when pinned; the knob allows it")
    func legacyTLSRefused() async throws {
        let identity = try TestCertificates.selfSigned()
        let origin = try await OriginServer.start(
            tls: .init(
                certificatePEM: identity.certificatePEM,
                privateKeyPEM: identity.privateKeyPEM,
                onlyLegacyTLS: true
            )
        )
        origin.setRoute("/secret", .data(Data("tls ok".utf8), contentType: "text/plain"))
        let pinned = SecurityPolicy.pinning(certificates: [identity.certificateDER])
        let refused = await SecurityPolicyTests.load(SecurityPolicyTests.session(pinned), origin.url("/secret"))
        guard case .failure(let error) = refused else {
            Issue.record("TLS 1.1 was accepted")
            return await origin.stop()
        }
        #expect(error.code == .serverCertificateUntrusted)
        #expect(error.message.contains("too old"), "\(error.message)")
        #expect(!error.message.contains("OPENSSL_internal"))
        var lowered = pinned
        lowered.minimumTLSVersion = .tls1_0
        let accepted = await SecurityPolicyTests.load(SecurityPolicyTests.session(lowered), origin.url("/secret"))
        #expect(try accepted.get() == "tls ok")
        await origin.stop()
    }

    @Test("An untrusted certificate's error says why in words, without BoringSSL's dump")
    func wordsForUntrusted() async throws {
        let origin = try await SecurityPolicyTests.start(try TestCertificates.selfSigned())
        let result = await SecurityPolicyTests.load(SecurityPolicyTests.session(.default), origin.url("/secret"))
        guard case .failure(let error) = result else {
            Issue.record("accepted")
            return await origin.stop()
        }
        #expect(error.message.contains("not trusted"), "\(error.message)")
        #expect(!error.message.contains("OPENSSL_internal"))
        await origin.stop()
    }

    @Test("A file that is not a certificate is refused by name: random bytes, a private key, a damaged PEM")
    func certificateFilesValidated() throws {
        let identity = try TestCertificates.selfSigned()
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let files: [(String, Data, String)] = [
            ("random.der", Data((0..<300).map { UInt8(truncatingIfNeeded: $0 &* 37) }), "not a PEM or DER certificate"),
            ("key.pem", Data(identity.privateKeyPEM.utf8), "private key"),
            (
                "damaged.pem", Data("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n".utf8),
                "damaged"
            ),
            ("empty.der", Data(), "not a PEM or DER certificate"),
        ]
        for (name, bytes, reason) in files {
            try bytes.write(to: folder.file(name))
            #expect {
                try SecurityPolicy.certificate(contentsOf: folder.file(name))
            } throws: { error in
                "\(error)".contains(folder.file(name).path) && "\(error)".contains(reason)
            }
        }
        try Data(identity.certificatePEM.utf8).write(to: folder.file("good.pem"))
        #expect(try SecurityPolicy.certificate(contentsOf: folder.file("good.pem")) == identity.certificateDER)
    }
}
