import Foundation
import Testing
import WebImageCoders
import WebImageHTTP
import WebImageOrigin
import WebImageTestSupport

/// imgproxy settings whose meaning differed, through the real binary configured by imgproxy's
/// environment: the canonical header, an unlimited queue, the fallback image's status 0.
@Suite("webimage serve: imgproxy's meanings", .timeLimit(.minutes(3)))
struct ServeImgproxySettingsTests {
    typealias RunningServer = ServeCommandTests.RunningServer

    static func png(_ color: RGBA, width: Int = 60, height: Int = 40) throws -> Data {
        try PNGCoder().encode(
            DecodedImage(bitmap: Bitmap(width: width, height: height, fill: color), format: .png),
            as: .png,
            options: .init()
        )
    }

    static func url(_ server: RunningServer, _ options: String, _ source: String) throws -> URL {
        try #require(URL(string: "\(server.url)/_/\(options)/plain/\(source)"))
    }

    @Test("IMGPROXY_SET_CANONICAL_HEADER: Link names the http source as canonical; off, no Link")
    func canonicalHeader() async throws {
        let origin = try await OriginServer.start()
        defer { Task { await origin.stop() } }
        origin.setRoute("/a.png", .data(try Self.png(RGBA(r: 9, g: 9, b: 9)), contentType: "image/png"))
        let session = HTTPSession()
        defer { Task { try? await session.shutdown() } }
        let source = origin.url("/a.png").absoluteString
        for on in [true, false] {
            let server = try await RunningServer.start(
                ["--bind", "127.0.0.1:0", "--insecure", "--allow-loopback", "--json"],
                environment: ["IMGPROXY_SET_CANONICAL_HEADER": on ? "true" : "false"]
            )
            defer { if server.process.isRunning { _ = server.stop() } }
            let (_, response) = try await session.data(for: .init(url: try Self.url(server, "w:30", source)))
            #expect(response.statusCode == 200)
            let link = response.headers[HTTPField.Name("Link")!]
            #expect(link == (on ? "<\(source)>; rel=\"canonical\"" : nil), "\(String(describing: link))")
            #expect(server.stop() == 0)
        }
        try await session.shutdown()
        await origin.stop()
    }

    @Test("IMGPROXY_AUTO_WEBP and IMGPROXY_AUTO_AVIF (and their older names) negotiate each format alone")
    func perFormatNegotiation() async throws {
        let origin = try await OriginServer.start()
        defer { Task { await origin.stop() } }
        origin.setRoute("/a.png", .data(try Self.png(RGBA(r: 9, g: 90, b: 9)), contentType: "image/png"))
        let session = HTTPSession()
        defer { Task { try? await session.shutdown() } }
        let source = origin.url("/a.png").absoluteString
        let browser = "image/avif,image/webp,image/apng,*/*;q=0.8"
        let cases: [(environment: [String: String], expected: String, vary: Bool)] = [
            (["IMGPROXY_AUTO_WEBP": "true"], "image/webp", true),
            (["IMGPROXY_ENABLE_WEBP_DETECTION": "true"], "image/webp", true),
            (["IMGPROXY_AUTO_AVIF": "true"], "image/avif", true),
            (["IMGPROXY_ENABLE_AVIF_DETECTION": "true"], "image/avif", true),
            (["IMGPROXY_AUTO_WEBP": "true", "IMGPROXY_AUTO_AVIF": "true"], "image/avif", true),
            ([:], "image/png", false),
        ]
        for entry in cases {
            let server = try await RunningServer.start(
                ["--bind", "127.0.0.1:0", "--insecure", "--allow-loopback", "--json"],
                environment: entry.environment
            )
            defer { if server.process.isRunning { _ = server.stop() } }
            var request = HTTPSession.Request(url: try Self.url(server, "w:30", source))
            request.headers[.accept] = browser
            let (body, response) = try await session.data(for: request)
            #expect(response.statusCode == 200, "\(entry.environment)")
            #expect(response.headers[.contentType] == entry.expected, "\(entry.environment)")
            #expect((response.headers[.vary] == "Accept") == entry.vary, "\(entry.environment)")
            #expect(ImageFormat(sniffing: body).mimeType == entry.expected, "\(entry.environment)")
            #expect(server.stop() == 0)
        }
        try await session.shutdown()
        await origin.stop()
    }

    @Test("IMGPROXY_REQUESTS_QUEUE_SIZE=0 is no limit: one worker, four requests at once, all answered 200")
    func unlimitedQueue() async throws {
        let origin = try await OriginServer.start()
        defer { Task { await origin.stop() } }
        let gate = OriginGate()
        let png = try Self.png(RGBA(r: 200, g: 10, b: 10))
        origin.setRoute("/held.png", .data(png, contentType: "image/png", behavior: .init(gate: gate)))
        let server = try await RunningServer.start(
            ["--bind", "127.0.0.1:0", "--insecure", "--allow-loopback", "--json", "--metrics-bind", "127.0.0.1:0"],
            environment: ["IMGPROXY_WORKERS": "1", "IMGPROXY_REQUESTS_QUEUE_SIZE": "0"]
        )
        defer { if server.process.isRunning { _ = server.stop() } }
        let metricsURL = try #require(server.metricsURL.flatMap(URL.init(string:)))
        var configuration = HTTPSession.Configuration()
        configuration.maximumConnectionsPerHost = 8
        let session = HTTPSession(configuration: configuration)
        defer { Task { try? await session.shutdown() } }
        let source = origin.url("/held.png").absoluteString
        let requests = try (1...4).map { width in
            let url = try Self.url(server, "w:\(10 * width)", source)
            return Task { try await session.data(for: .init(url: url)) }
        }
        // The first request holds the worker at the origin; the other three wait in the queue
        // (with a queue of none they would have been answered 429 at once).
        var queued = false
        for _ in 0..<600 where !queued {
            let (metrics, _) = try await session.data(for: .init(url: metricsURL))
            queued = String(decoding: metrics, as: UTF8.self).contains("webimage_queue_depth 3")
            if !queued { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(queued, "three requests waiting behind the one worker")
        // The working request reaches the origin (it may still be connecting when the queue
        // fills) and is held there: one source request while the others wait for the worker.
        #expect(await waitUntil { origin.requestCount(for: "/held.png") >= 1 })
        #expect(origin.requestCount(for: "/held.png") == 1)
        gate.open()
        for request in requests {
            let (_, response) = try await request.value
            #expect(response.statusCode == 200)
        }
        try await session.shutdown()
        #expect(server.stop() == 0)
        await origin.stop()
    }

    @Test("IMGPROXY_FALLBACK_IMAGE_HTTP_CODE=0: the fallback image with the status the failure would have had")
    func fallbackStatusOfTheFailure() async throws {
        let origin = try await OriginServer.start()
        defer { Task { await origin.stop() } }
        origin.setRoute("/text", .data(Data("not an image".utf8), contentType: "text/plain"))
        origin.setRoute("/broken", OriginRoute(status: 500, body: Data("down".utf8)))
        let fallback = try Self.png(RGBA(r: 0, g: 0, b: 255), width: 40, height: 20)
        let server = try await RunningServer.start(
            ["--bind", "127.0.0.1:0", "--insecure", "--allow-loopback", "--json"],
            environment: [
                "IMGPROXY_FALLBACK_IMAGE_DATA": fallback.base64EncodedString(),
                "IMGPROXY_FALLBACK_IMAGE_HTTP_CODE": "0",
            ]
        )
        defer { if server.process.isRunning { _ = server.stop() } }
        let session = HTTPSession()
        defer { Task { try? await session.shutdown() } }
        for (path, status) in [("/missing.png", 404), ("/text", 422), ("/broken", 502)] {
            let url = try Self.url(server, "w:20", origin.url(path).absoluteString)
            let (body, response) = try await session.data(for: .init(url: url))
            #expect(response.statusCode == status, "\(path)")
            let image = try ImageCodersManager.shared.decode(body)
            #expect(image.width == 20 && image.bitmap[5, 5] == RGBA(r: 0, g: 0, b: 255), "\(path)")
        }
        try await session.shutdown()
        #expect(server.stop() == 0)
        let refused = try await CLIRunner.runDetached(
            ["serve", "--insecure"],
            environment: ["IMGPROXY_FALLBACK_IMAGE_HTTP_CODE": "1000"]
        )
        #expect(refused.status == 2 && refused.stderr.contains("or 0 for the source failure's"), "\(refused.stderr)")
        await origin.stop()
    }
}
