import Foundation
import Testing
import WebImageCoders
import WebImageHTTP
import WebImageTestSupport

/// `webimage serve` survives what its clients and its own deadlines do to work in flight: a
/// client that hangs up while its result is being encoded, and a processing deadline that
/// passes during the encode, stop the encode of every output format, many times, and the same
/// process goes on answering. (A stopped JPEG encode once freed a buffer libjpeg had already
/// freed: the first hang-up during a large JPEG's encode aborted the whole server.)
@Suite("webimage serve: hang-ups and deadlines during the encode", .timeLimit(.minutes(6)))
struct ServeHangUpTests {
    typealias RunningServer = ServeCommandTests.RunningServer

    /// The formats the proxy writes, each with options that make its encode the longest part
    /// of the request: the source is decoded once (the decoded-source cache keeps it), then every
    /// request only encodes. GIF's quantiser and ICO's 256-pixel limit get smaller results.
    static let requests: [(format: String, options: String)] = [
        ("jpg", "q:95"), ("png", "q:90"), ("webp", "q:90"), ("avif", "q:70"), ("tiff", "q:90"),
        ("bmp", "q:90"), ("gif", "rs:fit:480:480"), ("ico", "rs:fit:256:256"),
    ]

    /// A 1600×1200 photo-like JPEG (noise over a gradient) in a folder served as `local:///`.
    static func sourceFolder() throws -> TemporaryDirectory {
        let folder = try TemporaryDirectory(prefix: "webimage-hangup-source")
        var bitmap = GeneratedImages.noise(width: 1600, height: 1200)
        let gradient = GeneratedImages.gradient(width: 1600, height: 1200)
        for index in stride(from: 0, to: bitmap.pixels.count, by: 4) {
            bitmap.pixels[index] = UInt8((Int(bitmap.pixels[index]) + Int(gradient.pixels[index])) / 2)
        }
        let jpeg = try JPEGCoder().encode(
            DecodedImage(bitmap: bitmap, format: .jpeg),
            as: .jpeg,
            options: .init(quality: 0.9)
        )
        try jpeg.write(to: folder.url.appendingPathComponent("photo.jpg"))
        return folder
    }

    static func start(
        source: TemporaryDirectory,
        cache: TemporaryDirectory,
        extra: [String] = []
    ) async throws
        -> RunningServer
    {
        try await RunningServer.start(
            [
                "--bind", "127.0.0.1:0", "--insecure", "--json", "--local-root", source.url.path,
                "--cache-dir", cache.url.path, "--workers", "2", "--metrics-bind", "127.0.0.1:0",
            ] + extra
        )
    }

    static func path(_ request: (format: String, options: String)) -> String {
        "/_/\(request.options)/plain/local:///photo.jpg@\(request.format)"
    }

    /// `GET path` answered in full: the status and the seconds it took.
    static func get(_ server: RunningServer, _ path: String, session: HTTPSession) async throws -> (Int, Double) {
        let url = try #require(URL(string: server.url + path))
        let started = ContinuousClock.now
        let (_, response) = try await session.data(for: .init(url: url))
        let elapsed = ContinuousClock.now - started
        return (response.statusCode, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }

    /// The server's process runs and `/health` answers `accepted`: 200, or with a tiny processing
    /// timeout also 504 (its codec self-test runs on the work queue under the same deadline).
    static func expectAlive(
        _ server: RunningServer,
        session: HTTPSession,
        after what: String,
        accepted: Set<Int> = [200]
    ) async throws {
        #expect(server.process.isRunning, "the server died after \(what)")
        guard server.process.isRunning else { return }
        let (status, _) = try await get(server, "/health", session: session)
        #expect(accepted.contains(status), "/health answered \(status) after \(what)")
    }

    /// The count `webimage_requests_total{status="STATUS"}` shows on the metrics listener.
    static func answers(withStatus status: Int, _ server: RunningServer, session: HTTPSession) async throws -> Int {
        let url = try #require(server.metricsURL.flatMap(URL.init(string:)))
        let (body, _) = try await session.data(for: .init(url: url))
        let prefix = #"webimage_requests_total{status="\#(status)"} "#
        return String(decoding: body, as: UTF8.self).split(separator: "\n")
            .first { $0.hasPrefix(prefix) }
            .flatMap { Int($0.dropFirst(prefix.count)) } ?? 0
    }

    /// Runs `body` with an HTTP session that is shut down on every path.
    static func withSession(_ body: (HTTPSession) async throws -> Void) async throws {
        let session = HTTPSession()
        do {
            try await body(session)
        } catch {
            try? await session.shutdown()
            throw error
        }
        try await session.shutdown()
    }

    @Test("Clients hanging up (FIN and RST) all through the encode of every format leave the server answering")
    func hangUps() async throws {
        let source = try Self.sourceFolder()
        let cache = try TemporaryDirectory(prefix: "webimage-hangup-cache")
        defer {
            source.remove()
            cache.remove()
        }
        // A deadline far off: this test is about hang-ups, and a busy machine may take the default
        // 10 s for an AVIF encode in a debug build.
        let server = try await Self.start(source: source, cache: cache, extra: ["--processing-timeout", "120"])
        defer { if server.process.isRunning { _ = server.stop() } }
        try await Self.withSession { session in try await Self.hangUps(on: server, session: session) }
    }

    static func hangUps(on server: RunningServer, session: HTTPSession) async throws {
        let port = try #require(URL(string: server.url)?.port)
        var hangUps = 0
        for request in Self.requests {
            let path = Self.path(request)
            // The first request decodes and keeps the source; the second times an encode.
            let (first, _) = try await Self.get(server, path, session: session)
            #expect(first == 200, "\(path)")
            let (second, seconds) = try await Self.get(server, path, session: session)
            #expect(second == 200, "\(path)")
            // Hang-ups spread over the time a whole answer took, half of them with a reset.
            for attempt in 0..<8 {
                let connection = try RawClientConnection(port: port)
                connection.send("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                try await Task.sleep(for: .seconds(seconds * (Double(attempt) + 0.5) / 8))
                if attempt % 2 == 0 { connection.close() } else { connection.reset() }
                hangUps += 1
            }
            try await Self.expectAlive(server, session: session, after: "hang-ups during \(request.format) encodes")
        }
        // Some hang-ups came while the work was in flight (logged as 499, as nginx does): the
        // encodes they stopped are the ones this test is about.
        let cancelled = try await Self.answers(withStatus: 499, server, session: session)
        #expect(cancelled > 0 && cancelled <= hangUps, "\(cancelled) of \(hangUps) hang-ups cancelled work")
        try await Self.expectAlive(server, session: session, after: "\(hangUps) hang-ups")
        #expect(server.stop() == 0)
    }

    @Test("Processing deadlines falling inside the encode of every format leave the server answering")
    func deadlines() async throws {
        let source = try Self.sourceFolder()
        defer { source.remove() }
        try await Self.withSession { session in try await Self.deadlines(source: source, session: session) }
    }

    static func deadlines(source: TemporaryDirectory, session: HTTPSession) async throws {
        // Deadlines from 20 ms up: each format's encode takes between them, so some fall in it.
        var timedOut = 0
        for timeout in ["0.02", "0.05", "0.1", "0.2", "0.4", "0.8"] {
            let cache = try TemporaryDirectory(prefix: "webimage-deadline-cache")
            defer { cache.remove() }
            let server = try await Self.start(source: source, cache: cache, extra: ["--processing-timeout", timeout])
            defer { if server.process.isRunning { _ = server.stop() } }
            for request in Self.requests {
                // Twice: the second finds the decoded source kept when the first decoded in time.
                for _ in 0..<2 {
                    let (status, _) = try await Self.get(server, Self.path(request), session: session)
                    #expect(status == 200 || status == 504, "\(request.format) with a \(timeout) s deadline: \(status)")
                }
                try await Self.expectAlive(
                    server,
                    session: session,
                    after: "\(request.format) with a \(timeout) s deadline",
                    accepted: [200, 504]
                )
            }
            timedOut += try await Self.answers(withStatus: 504, server, session: session)
            #expect(server.stop() == 0, "the server with a \(timeout) s deadline")
        }
        #expect(timedOut > 0)
    }
}
