import Foundation
import Testing
import WebImageHTTP
import WebImageTestSupport

/// A kept-alive connection the server closes as the next request arrives, without an answer: the
/// race every client of a keep-alive server meets (an idle timeout, a server that closes after a
/// redirect without saying so).
@Suite("Kept-alive connections closed under a request", .timeLimit(.minutes(1)))
struct StaleConnectionTests {
    /// The first connection answers its first request and closes under the second; every later
    /// connection answers every request. Answers name their connection and request.
    static func closingServer(status: String = "200 OK", location: String? = nil) throws -> RawHTTPServer {
        try RawHTTPServer { arrival in
            if arrival.connection == 0, arrival.request == 1 { return nil }
            let body = "connection \(arrival.connection) request \(arrival.request)"
            let extra = location.map { "Location: \($0)\r\n" } ?? ""
            return Data("HTTP/1.1 \(status)\r\n\(extra)Content-Length: \(body.utf8.count)\r\n\r\n\(body)".utf8)
        }
    }

    @Test("A GET whose kept-alive connection closes before any answer goes once more, on a new connection")
    func getGoesAgain() async throws {
        let server = try Self.closingServer()
        defer { server.stop() }
        let session = HTTPSession()
        let first = try await session.data(for: .init(url: server.url("/a")))
        let second = try await session.data(for: .init(url: server.url("/b")))
        try await session.shutdown()
        #expect(String(decoding: first.0, as: UTF8.self) == "connection 0 request 0")
        #expect(String(decoding: second.0, as: UTF8.self) == "connection 1 request 0")
        #expect(
            server.received
                == [
                    .init(connection: 0, request: 0), .init(connection: 0, request: 1),
                    .init(connection: 1, request: 0),
                ]
        )
    }

    @Test("A redirect followed on a connection the server closed after the 3xx still arrives")
    func redirectGoesAgain() async throws {
        let server = try RawHTTPServer { arrival in
            switch (arrival.connection, arrival.request) {
            case (0, 0): Data("HTTP/1.1 302 Found\r\nLocation: /next\r\nContent-Length: 0\r\n\r\n".utf8)
            case (0, _): nil
            default: Data("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\ndone".utf8)
            }
        }
        defer { server.stop() }
        let session = HTTPSession()
        let (data, response) = try await session.data(for: .init(url: server.url("/start")))
        try await session.shutdown()
        #expect(response.statusCode == 200 && String(decoding: data, as: UTF8.self) == "done")
        #expect(server.received.count == 3)
    }

    @Test("A POST is not sent twice: the lost connection is the answer")
    func postIsNotRepeated() async throws {
        let server = try Self.closingServer()
        defer { server.stop() }
        let session = HTTPSession()
        _ = try await session.data(for: .init(url: server.url("/a")))
        var post = HTTPSession.Request(url: server.url("/form"))
        post.method = .post
        post.body = .data(Data("x=1".utf8))
        await #expect(throws: HTTPSessionError.self) { try await session.data(for: post) }
        try await session.shutdown()
        #expect(server.received == [.init(connection: 0, request: 0), .init(connection: 0, request: 1)])
    }
}
