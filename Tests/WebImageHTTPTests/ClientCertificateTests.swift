import Foundation
import Testing
import WebImageHTTP
import WebImageOrigin
import WebImageTestSupport

@Suite("Client certificates (mutual TLS)", .timeLimit(.minutes(1)))
struct ClientCertificateTests {
    /// A server CA, a client CA, an origin that asks for a client certificate from that CA.
    struct MutualTLS {
        let serverAuthority: TestIdentity
        let clientAuthority: TestIdentity
        let origin: OriginServer

        static func start() async throws -> MutualTLS {
            let serverAuthority = try TestCertificates.selfSigned(commonName: "swift-web-image server CA")
            let clientAuthority = try TestCertificates.selfSigned(commonName: "swift-web-image client CA")
            let server = try TestCertificates.issued(by: serverAuthority)
            let origin = try await OriginServer.start(
                tls: .init(
                    certificatePEM: server.certificatePEM,
                    privateKeyPEM: server.privateKeyPEM,
                    clientCertificateAuthoritiesPEM: clientAuthority.certificatePEM
                )
            )
            origin.setRoute("/who", .data(Data("mutual ok".utf8), contentType: "text/plain"))
            return MutualTLS(serverAuthority: serverAuthority, clientAuthority: clientAuthority, origin: origin)
        }

        /// GET /who with `identity`; the body or the error.
        func load(_ identity: ClientIdentity?) async -> Result<String, HTTPSessionError> {
            var configuration = HTTPSession.Configuration.default
            configuration.securityPolicy.trustRoots = [serverAuthority.certificateDER]
            configuration.securityPolicy.clientIdentity = identity
            let session = HTTPSession(configuration: configuration)
            defer { Task { try? await session.shutdown() } }
            do throws(HTTPSessionError) {
                return .success(try await session.get(origin.url("/who").absoluteString, serializer: .string).1)
            } catch {
                return .failure(error)
            }
        }
    }

    static func identity(_ identity: TestIdentity) throws -> ClientIdentity {
        let file = try write(identity.certificatePEM)
        defer { try? FileManager.default.removeItem(at: file) }
        let der = try SecurityPolicy.certificates(contentsOf: file)
        return try ClientIdentity(certificateChain: der, privateKeyPEM: identity.privateKeyPEM)
    }

    static func write(_ text: String, name: String = UUID().uuidString) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("webimage-\(name).pem")
        try Data(text.utf8).write(to: url)
        return url
    }

    @Test("A server that asks for a certificate answers with one from its CA and refuses the handshake without one")
    func mutualTLS() async throws {
        let tls = try await MutualTLS.start()
        let client = try TestCertificates.client(issuedBy: tls.clientAuthority)
        #expect(try await tls.load(try Self.identity(client)).get() == "mutual ok")
        let refused = await tls.load(nil)
        #expect(throws: HTTPSessionError.self) { try refused.get() }
        if case .failure(let error) = refused {
            #expect(error.code == .clientCertificateRejected)
            #expect(error.message.contains("asks for a client certificate and none was given"), "\(error.message)")
        }
        let stranger = try TestCertificates.client(issuedBy: try TestCertificates.selfSigned(commonName: "another CA"))
        let refusedStranger = await tls.load(try Self.identity(stranger))
        #expect(throws: HTTPSessionError.self) { try refusedStranger.get() }
        if case .failure(let error) = refusedStranger {
            #expect(error.message.contains(tls.origin.url("/who").host ?? ""))
        }
        #expect(tls.origin.requestCount(for: "/who") == 1, "no request reached the origin without a valid certificate")
        await tls.origin.stop()
    }

    @Test("Read as curl's --cert and --key: separate files, one combined file; errors name the file and the cause")
    func files() async throws {
        let authority = try TestCertificates.selfSigned(commonName: "client CA")
        let client = try TestCertificates.client(issuedBy: authority)
        let certificate = try Self.write(client.certificatePEM)
        let key = try Self.write(client.privateKeyPEM)
        let combined = try Self.write(client.certificatePEM + "\n" + client.privateKeyPEM)
        defer { for file in [certificate, key, combined] { try? FileManager.default.removeItem(at: file) } }

        let separate = try ClientIdentity.contentsOf(certificateFile: certificate, keyFile: key)
        #expect(separate.certificateChain.first == client.certificateDER && separate.certificateChain.count == 2)
        #expect(try ClientIdentity.contentsOf(certificateFile: combined) == separate)

        let other = try TestCertificates.client(issuedBy: authority)
        let otherKey = try Self.write(other.privateKeyPEM)
        let missing = URL(fileURLWithPath: "/nonexistent/webimage-client.pem")
        let garbage = try Self.write("not a certificate at all")
        let encrypted = try Self.write(
            "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n"
        )
        defer { for file in [otherKey, garbage, encrypted] { try? FileManager.default.removeItem(at: file) } }
        let cases: [(URL, URL?, String, String)] = [
            (certificate, otherKey, otherKey.path, "does not belong to the client certificate"),
            (certificate, nil, certificate.path, "no private key in the file"),
            (missing, key, missing.path, "cannot read the file"),
            (certificate, missing, missing.path, "cannot read the file"),
            (garbage, key, garbage.path, "no PEM certificate"),
            (key, key, key.path, "no PEM certificate"),
            (certificate, garbage, garbage.path, "no PEM private key"),
            (certificate, encrypted, encrypted.path, "encrypted private key"),
        ]
        for (certificateFile, keyFile, named, cause) in cases {
            #expect {
                try ClientIdentity.contentsOf(certificateFile: certificateFile, keyFile: keyFile)
            } throws: { error in
                let text = "\(error)"
                return text.contains(named) && text.contains(cause)
            }
        }
    }
}
