import Foundation
import Testing
import WebImageHTTP
import WebImageOrigin
import WebImageTestSupport

@Suite("Stream tasks (NSURLSessionStreamTask)", .timeLimit(.minutes(1)))
struct StreamTaskTests {
    /// A line server and a session; both stopped on every path.
    static func with(
        tls: OriginServer.TLS? = nil,
        configuration: HTTPSession.Configuration = .default,
        _ body: (LineServer, HTTPSession) async throws -> Void
    ) async throws {
        let server = try await LineServer.start(tls: tls)
        let session = HTTPSession(configuration: configuration)
        do {
            try await body(server, session)
        } catch {
            try? await session.shutdown()
            await server.stop()
            throw error
        }
        try? await session.shutdown()
        await server.stop()
    }

    static func text(_ read: (data: Data, atEOF: Bool)) -> String { String(decoding: read.data, as: UTF8.self) }

    @Test("Reads take at least min and at most max bytes, in order; reads asked before resume wait for the connection")
    func readsAndWrites() async throws {
        try await Self.with { server, session in
            let stream = session.streamTask(withHostName: "127.0.0.1", port: server.port)
            async let greeting = stream.readData(ofMinLength: 6, maxLength: 6, timeout: .seconds(20))
            try await Task.sleep(for: .milliseconds(20))
            stream.resume()
            #expect(Self.text(try await greeting) == "hello\n")
            try await stream.write(Data("ping\n".utf8), timeout: .seconds(20))
            let ping = try await stream.readData(ofMinLength: 5, maxLength: 64, timeout: .seconds(20))
            #expect(Self.text(ping) == "ping\n" && !ping.atEOF)

            try await stream.write(Data("BIG 100000\n".utf8), timeout: .seconds(20))
            var body = Data()
            while body.count < 100_000 {
                let chunk = try await stream.readData(ofMinLength: 1, maxLength: 4096, timeout: .seconds(20))
                #expect(chunk.data.count <= 4096 && !chunk.data.isEmpty)
                body.append(chunk.data)
            }
            #expect(body == Data((0..<100_000).map { UInt8($0 % 251) }))
            stream.cancel()
        }
    }

    @Test("A read that times out leaves the connection usable; cancelling its Swift task ends only that read")
    func timeoutAndCancellation() async throws {
        try await Self.with { server, session in
            let stream = session.streamTask(withHostName: "127.0.0.1", port: server.port)
            stream.resume()
            _ = try await stream.readData(ofMinLength: 6, maxLength: 6, timeout: .seconds(20))
            try await stream.write(Data("WAIT\n".utf8), timeout: .seconds(20))
            await #expect {
                try await stream.readData(ofMinLength: 1, maxLength: 10, timeout: .milliseconds(200))
            } throws: { ($0 as? HTTPSessionError)?.code == .timedOut }

            let waiting = Task { try await stream.readData(ofMinLength: 1, maxLength: 10, timeout: .seconds(30)) }
            try await Task.sleep(for: .milliseconds(50))
            waiting.cancel()
            await #expect { try await waiting.value } throws: { ($0 as? HTTPSessionError)?.code == .cancelled }

            try await stream.write(Data("still here\n".utf8), timeout: .seconds(20))
            #expect(
                Self.text(try await stream.readData(ofMinLength: 11, maxLength: 11, timeout: .seconds(20)))
                    == "still here\n"
            )
            await #expect {
                try await stream.readData(ofMinLength: 5, maxLength: 4, timeout: .seconds(1))
            } throws: { ($0 as? HTTPSessionError)?.message.contains("0 ≤ min ≤ max") == true }

            // cancel(): a waiting read and every later call fail with cancelled.
            let pending = Task { try await stream.readData(ofMinLength: 1, maxLength: 10, timeout: .seconds(30)) }
            try await Task.sleep(for: .milliseconds(50))
            stream.cancel()
            await #expect { try await pending.value } throws: { ($0 as? HTTPSessionError)?.code == .cancelled }
            await #expect {
                try await stream.write(Data("x\n".utf8), timeout: .seconds(5))
            } throws: { ($0 as? HTTPSessionError)?.code == .cancelled }
        }
    }

    @Test(
        "closeWrite half-closes: the server sees the end, still answers, and reads end with atEOF; chunks stream it all"
    )
    func halfCloseAndChunks() async throws {
        try await Self.with { server, session in
            let stream = session.streamTask(withHostName: "127.0.0.1", port: server.port)
            stream.resume()
            try await stream.write(Data("BIG 200000\nBYE\n".utf8), timeout: .seconds(20))
            stream.closeWrite()
            var received = Data()
            for try await chunk in stream.chunks {
                #expect(chunk.count <= 65_536)
                received.append(chunk)
            }
            #expect(received.count == 6 + 200_000 + 4)
            #expect(received.prefix(6) == Data("hello\n".utf8) && received.suffix(4) == Data("bye\n".utf8))
            #expect(received.dropFirst(6).prefix(200_000) == Data((0..<200_000).map { UInt8($0 % 251) }))
            let end = try await stream.readData(ofMinLength: 1, maxLength: 10, timeout: .seconds(5))
            #expect(end.data.isEmpty && end.atEOF)
            let deadline = ContinuousClock.now + .seconds(20)
            while !server.lines.contains("<eof>"), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(server.lines == ["BIG 200000", "BYE", "<eof>"])
            stream.cancel()
        }
    }

    @Test(
        "startSecureConnection upgrades a connection (STARTTLS) under the session's policy; an untrusted server is refused"
    )
    func startTLS() async throws {
        let authority = try TestCertificates.selfSigned(commonName: "swift-web-image test CA")
        let server = try TestCertificates.issued(by: authority)
        let tls = OriginServer.TLS(certificatePEM: server.certificatePEM, privateKeyPEM: server.privateKeyPEM)
        var trusting = HTTPSession.Configuration.default
        trusting.securityPolicy.trustRoots = [authority.certificateDER]
        for host in ["127.0.0.1", "localhost"] {
            try await Self.with(tls: tls, configuration: trusting) { lineServer, session in
                let stream = session.streamTask(withHostName: host, port: lineServer.port)
                stream.resume()
                #expect(
                    Self.text(try await stream.readData(ofMinLength: 6, maxLength: 6, timeout: .seconds(20)))
                        == "hello\n"
                )
                try await stream.write(Data("STARTTLS\n".utf8), timeout: .seconds(20))
                #expect(
                    Self.text(try await stream.readData(ofMinLength: 3, maxLength: 3, timeout: .seconds(20))) == "GO\n"
                )
                try await stream.startSecureConnection()
                try await stream.write(Data("secret\n".utf8), timeout: .seconds(20))
                #expect(
                    Self.text(try await stream.readData(ofMinLength: 7, maxLength: 7, timeout: .seconds(20)))
                        == "secret\n"
                )
                #expect(lineServer.lines == ["STARTTLS", "secret"], "the server read the line through TLS")
                stream.cancel()
            }
        }
        // The system trust store does not know the test CA.
        try await Self.with(tls: tls) { lineServer, session in
            let stream = session.streamTask(withHostName: "127.0.0.1", port: lineServer.port)
            stream.resume()
            _ = try await stream.readData(ofMinLength: 6, maxLength: 6, timeout: .seconds(20))
            try await stream.write(Data("STARTTLS\n".utf8), timeout: .seconds(20))
            _ = try await stream.readData(ofMinLength: 3, maxLength: 3, timeout: .seconds(20))
            await #expect {
                try await stream.startSecureConnection()
            } throws: { ($0 as? HTTPSessionError)?.code == .serverCertificateUntrusted }
            await #expect {
                try await stream.write(Data("secret\n".utf8), timeout: .seconds(5))
            } throws: { $0 is HTTPSessionError }
            #expect(!lineServer.lines.contains("secret"))
        }
    }

    @Test("Pins apply to stream tasks: the pinned CA or key is trusted, a wrong pin refuses the stream")
    func pinning() async throws {
        let authority = try TestCertificates.selfSigned(commonName: "swift-web-image test CA")
        let server = try TestCertificates.issued(by: authority)
        let stranger = try TestCertificates.selfSigned(commonName: "another CA")
        let tls = OriginServer.TLS(certificatePEM: server.certificatePEM, privateKeyPEM: server.privateKeyPEM)
        let policies: [(SecurityPolicy, Bool)] = [
            (.pinning(certificates: [authority.certificateDER]), true),
            (.pinning(certificates: [stranger.certificateDER]), false),
            (.pinning(publicKeysOf: [stranger.certificateDER], allowInvalidCertificates: true), false),
            (.pinning(publicKeysOf: [server.certificateDER], allowInvalidCertificates: true), true),
        ]
        for (policy, trusted) in policies {
            var configuration = HTTPSession.Configuration.default
            configuration.securityPolicy = policy
            try await Self.with(tls: tls, configuration: configuration) { lineServer, session in
                let stream = session.streamTask(withHostName: "127.0.0.1", port: lineServer.port)
                stream.resume()
                _ = try await stream.readData(ofMinLength: 6, maxLength: 6, timeout: .seconds(20))
                try await stream.write(Data("STARTTLS\n".utf8), timeout: .seconds(20))
                _ = try await stream.readData(ofMinLength: 3, maxLength: 3, timeout: .seconds(20))
                if trusted {
                    try await stream.startSecureConnection()
                } else {
                    await #expect {
                        try await stream.startSecureConnection()
                    } throws: { ($0 as? HTTPSessionError)?.code == .serverCertificateUntrusted }
                }
                stream.cancel()
            }
        }
    }

    @Test("A refused address and a closed port fail every read with the cause")
    func connectFailures() async throws {
        var guarded = HTTPSession.Configuration.default
        guarded.connectionValidator = { address in address.hasPrefix("127.") ? "loopback is not allowed here" : nil }
        try await Self.with(configuration: guarded) { server, session in
            let stream = session.streamTask(withHostName: "127.0.0.1", port: server.port)
            stream.resume()
            await #expect {
                try await stream.readData(ofMinLength: 1, maxLength: 10, timeout: .seconds(20))
            } throws: { error in
                let error = error as? HTTPSessionError
                return error?.code == .connectionNotAllowed
                    && error?.message.contains("loopback is not allowed") == true
            }
        }
        let closed = try ClosedPort()
        defer { closed.release() }
        let session = HTTPSession()
        let stream = session.streamTask(withHostName: "127.0.0.1", port: closed.port)
        stream.resume()
        await #expect {
            try await stream.write(Data("x\n".utf8), timeout: .seconds(20))
        } throws: { ($0 as? HTTPSessionError)?.code == .cannotConnect }
        try await session.shutdown()
    }
}
