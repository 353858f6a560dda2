import Foundation
import Testing
import WebImageCoders
import WebImageHTTP
import WebImageOrigin
import WebImageTestSupport

@testable import WebImageServer

/// The server options imgproxy users set: allowed-source patterns, redirects, source headers,
/// CORS, the path prefix, caching headers, default qualities and the fallback image.
@Suite("webimage serve: server options", .timeLimit(.minutes(3)))
struct ProxyServerOptionsTests {
    typealias Fixture = ImageProxyServerTests.Fixture

    @Test("--allowed-sources patterns match as imgproxy's: a prefix, * for any run without /")
    func patterns() throws {
        let wildcardHost = SourcePattern("https://*.example.com/")
        #expect(wildcardHost.matches("https://img.example.com/a.jpg"))
        #expect(wildcardHost.matches("https://a.b.example.com/a.jpg"))
        #expect(!wildcardHost.matches("https://evil.com/.example.com/a.jpg"), "* never crosses a /")
        #expect(!wildcardHost.matches("http://img.example.com/a.jpg"))
        let folder = SourcePattern("https://cdn.example.com/*/images/")
        #expect(folder.matches("https://cdn.example.com/site/images/a.png"))
        #expect(!folder.matches("https://cdn.example.com/site/other/images/a.png"))
        #expect(
            SourcePattern("https://cdn.example.com").matches("https://cdn.example.com.evil.net/x"),
            "a prefix, as imgproxy"
        )
        var policy = SourcePolicy(allowsLoopback: true)
        policy.allowedPatterns = [SourcePattern("http://127.0.0.1:*/allowed/")]
        #expect(throws: ProxyError.self) { try policy.check("http://127.0.0.1:8080/other/a.jpg") }
        #expect(try policy.check("http://127.0.0.1:8080/allowed/a.jpg").path == "/allowed/a.jpg")
    }

    @Test("Allowed-source patterns, --max-redirects and source headers over HTTP")
    func sources() async throws {
        let fixture = try await ImageProxyServerTests.start {
            $0.sourcePolicy.allowedPatterns = [
                SourcePattern("http://127.0.0.1:*/photo"), SourcePattern("http://127.0.0.1:*/hop"),
            ]
            $0.limits.maxRedirects = 1
            $0.sourceHeaders = [("X-Tenant", "blue"), ("User-Agent", "imgproxy-compatible/1")]
        }
        defer { Task { await fixture.stop() } }
        fixture.origin.setRoute("/hop1", .redirect(to: "/photo.jpg"))
        fixture.origin.setRoute("/hop2", .redirect(to: "/hop1"))
        let (direct, _) = try await fixture.get(fixture.url("w:50", "/photo.jpg"))
        #expect(direct.statusCode == 200)
        let request = try #require(fixture.origin.requests.last { $0.path == "/photo.jpg" })
        #expect(request.headers.contains { $0.name == "x-tenant" && $0.value == "blue" })
        #expect(request.headers.contains { $0.name == "user-agent" && $0.value == "imgproxy-compatible/1" })
        let (refused, _) = try await fixture.get(fixture.url("w:50", "/text"))
        #expect(refused.statusCode == 403, "not under a pattern")
        let (oneHop, _) = try await fixture.get(fixture.url("w:50", "/hop1"))
        #expect(oneHop.statusCode == 200)
        let (twoHops, _) = try await fixture.get(fixture.url("w:50", "/hop2"))
        #expect(twoHops.statusCode == 502, "one redirect at most")
        await fixture.stop()
    }

    @Test(
        "CORS with --allow-origin (OPTIONS answered); --path-prefix; Expires with Cache-Control, shortened by expires"
    )
    func answers() async throws {
        let fixture = try await ImageProxyServerTests.start {
            $0.allowOrigin = "https://site.example"
            $0.pathPrefix = "/img"
            $0.ttl = 3600
        }
        defer { Task { await fixture.stop() } }
        func prefixed(_ url: String) -> String {
            url.replacingOccurrences(of: fixture.server.baseURL, with: fixture.server.baseURL + "/img")
        }
        let (unprefixed, _) = try await fixture.get(fixture.url("w:50", "/photo.jpg"))
        #expect(unprefixed.statusCode == 404)
        let (answer, _) = try await fixture.get(prefixed(fixture.url("w:50", "/photo.jpg")))
        #expect(answer.statusCode == 200)
        #expect(answer.headers[HTTPField.Name("Access-Control-Allow-Origin")!] == "https://site.example")
        #expect(answer.headers[.cacheControl] == "public, max-age=3600")
        let expires = try #require(answer.headers[.expires])
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        let moment = try #require(formatter.date(from: expires), "\(expires)")
        #expect(abs(moment.timeIntervalSinceNow - 3600) < 120, "\(expires)")
        let soon = Int(Date().timeIntervalSince1970) + 100
        let (shortened, _) = try await fixture.get(prefixed(fixture.url("exp:\(soon)/w:50", "/photo.jpg")))
        let maxAge = shortened.headers[.cacheControl].flatMap { Int($0.split(separator: "=").last ?? "") } ?? -1
        #expect((0...100).contains(maxAge), "\(shortened.headers[.cacheControl] ?? "")")
        let (health, _) = try await fixture.get(fixture.server.baseURL + "/health")
        #expect(health.statusCode == 200)
        var preflight = HTTPSession.Request(url: try #require(URL(string: prefixed(fixture.url("w:50", "/photo.jpg")))))
        preflight.method = .options
        let (_, options) = try await fixture.session.data(for: preflight)
        #expect(options.statusCode == 200)
        #expect(options.headers[HTTPField.Name("Access-Control-Allow-Methods")!]?.contains("GET") == true)
        await fixture.stop()

        let plain = try await ImageProxyServerTests.start()
        defer { Task { await plain.stop() } }
        var refused = HTTPSession.Request(url: try #require(URL(string: plain.url("w:50", "/photo.jpg"))))
        refused.method = .options
        let (_, noCORS) = try await plain.session.data(for: refused)
        #expect(noCORS.statusCode == 405 && noCORS.headers[HTTPField.Name("Access-Control-Allow-Origin")!] == nil)
        await plain.stop()
    }

    @Test("--last-modified: results carry the source's Last-Modified; If-Modified-Since not older is 304")
    func lastModified() async throws {
        let fixture = try await ImageProxyServerTests.start { $0.usesLastModified = true }
        defer { Task { await fixture.stop() } }
        let (photo, _) = try await fixture.session.data(for: HTTPSession.Request(url: fixture.origin.url("/photo.jpg")))
        let stamp = "Tue, 03 Mar 2026 10:00:00 GMT"
        fixture.origin.setRoute(
            "/dated.jpg",
            OriginRoute(headers: [("Content-Type", "image/jpeg"), ("Last-Modified", stamp)], body: photo)
        )
        let url = fixture.url("w:50", "/dated.jpg")
        let (first, _) = try await fixture.get(url)
        #expect(first.statusCode == 200 && first.headers[.lastModified] == stamp)
        let (same, empty) = try await fixture.get(url, headers: [.ifModifiedSince: stamp])
        #expect(same.statusCode == 304 && empty.isEmpty)
        let (later, _) = try await fixture.get(url, headers: [.ifModifiedSince: "Wed, 04 Mar 2026 10:00:00 GMT"])
        #expect(later.statusCode == 304)
        let (older, body) = try await fixture.get(url, headers: [.ifModifiedSince: "Mon, 02 Mar 2026 10:00:00 GMT"])
        #expect(older.statusCode == 200 && !body.isEmpty)
        // If-None-Match decides when both are sent.
        let (mismatch, _) = try await fixture.get(url, headers: [.ifModifiedSince: stamp, .ifNoneMatch: "\"other\""])
        #expect(mismatch.statusCode == 200)
        #expect(
            HTTPDate.parse(HTTPDate.string(from: Date(timeIntervalSince1970: 1_700_000_000)))?.timeIntervalSince1970
                == 1_700_000_000
        )
        await fixture.stop()
    }

    @Test("The fallback image stands in for a missing or broken source, with its status and lifetime")
    func fallback() async throws {
        let blue = Bitmap(width: 40, height: 20, fill: RGBA(r: 0, g: 0, b: 255))
        let png = try ImageCodersManager.shared.encode(
            DecodedImage(frames: [.init(bitmap: blue)], format: .png),
            as: .png
        )
        let fixture = try await ImageProxyServerTests.start {
            $0.fallbackImage = .data(png)
            $0.fallbackImageStatus = 404
            $0.fallbackImageTTL = 60
            $0.formatQuality = [.jpeg: 10]
        }
        defer { Task { await fixture.stop() } }
        for path in ["/missing.jpg", "/text"] {
            let (response, body) = try await fixture.get(fixture.url("w:20", path, suffix: "@png"))
            #expect(response.statusCode == 404 && response.headers[.cacheControl] == "public, max-age=60", "\(path)")
            let image = try ImageCodersManager.shared.decode(body)
            #expect(
                image.width == 20 && image.height == 10 && image.bitmap[10, 5] == RGBA(r: 0, g: 0, b: 255),
                "\(path)"
            )
        }
        let (found, _) = try await fixture.get(fixture.url("w:20", "/photo.jpg", suffix: "@png"))
        #expect(found.statusCode == 200 && found.headers[.cacheControl] == "public, max-age=31536000")
        // --format-quality: JPEG results default to quality 10 here.
        let (low, lowBody) = try await fixture.get(fixture.url("w:400", "/photo.jpg", suffix: "@jpg"))
        let (normal, normalBody) = try await fixture.get(fixture.url("w:400/q:80", "/photo.jpg", suffix: "@jpg"))
        #expect(low.statusCode == 200 && normal.statusCode == 200 && lowBody.count * 2 < normalBody.count)
        await fixture.stop()
    }
}

/// `local://` sources under `--local-root`.
@Suite("webimage serve: local sources", .timeLimit(.minutes(3)))
struct ProxyLocalSourceTests {
    @Test("local:// serves files under the root; .., symbolic links out and missing files are refused")
    func localFiles() async throws {
        let folder = try TemporaryDirectory(prefix: "webimage-local")
        defer { folder.remove() }
        let root = folder.url.appendingPathComponent("root")
        try FileManager.default.createDirectory(
            at: root.appendingPathComponent("images"),
            withIntermediateDirectories: true
        )
        let png = try ImageCodersManager.shared.encode(
            DecodedImage(frames: [.init(bitmap: GeneratedImages.gradient(width: 80, height: 40))], format: .png),
            as: .png
        )
        try png.write(to: root.appendingPathComponent("images/a b.png"))
        try png.write(to: folder.url.appendingPathComponent("secret.png"))
        try FileManager.default.createSymbolicLink(
            at: root.appendingPathComponent("images/out.png"),
            withDestinationURL: folder.url.appendingPathComponent("secret.png")
        )
        try FileManager.default.createSymbolicLink(
            at: root.appendingPathComponent("inside.png"),
            withDestinationURL: root.appendingPathComponent("images/a b.png")
        )
        let fixture = try await ImageProxyServerTests.start { $0.localRoot = try? LocalSourceRoot(root.path) }
        defer { Task { await fixture.stop() } }
        func get(_ source: String) async throws -> (Int, Data) {
            let signedPath = "/w:40/plain/\(source)@png"
            let url = fixture.server.baseURL + "/" + fixture.signer.signature(for: signedPath) + signedPath
            let (response, body) = try await fixture.get(url)
            return (response.statusCode, body)
        }
        let (status, body) = try await get("local:///images/a%20b.png")
        #expect(status == 200, "\(String(decoding: body.prefix(200), as: UTF8.self))")
        #expect(try ImageCodersManager.shared.decode(body).width == 40)
        #expect(try await get("local:///inside.png").0 == 200, "a link inside the root")
        for (source, expected) in [
            ("local:///images/../../secret.png", 403), ("local:///images/%2E%2E/%2E%2E/secret.png", 403),
            ("local:///images/out.png", 403), ("local:///missing.png", 404), ("local:///images", 404),
        ] {
            let (status, body) = try await get(source)
            #expect(status == expected, "\(source): \(String(decoding: body.prefix(200), as: UTF8.self))")
        }
        await fixture.stop()

        let off = try await ImageProxyServerTests.start()
        defer { Task { await off.stop() } }
        let signedPath = "/w:40/plain/local:///images/a.png"
        let (refused, _) = try await off.get(
            off.server.baseURL + "/" + off.signer.signature(for: signedPath) + signedPath
        )
        #expect(refused.statusCode == 403, "no --local-root: refused")
        await off.stop()
    }
}

/// BMP and ICO results and sources; progressive JPEG and interlaced PNG results.
@Suite("webimage serve: more formats", .timeLimit(.minutes(3)))
struct ProxyMoreFormatsTests {
    @Test("bmp, ico and tiff results (ico at most 256×256), BMP sources; --jpeg-progressive, --png-interlaced")
    func formats() async throws {
        let fixture = try await ImageProxyServerTests.start {
            $0.jpegProgressive = true
            $0.pngInterlaced = true
        }
        defer { Task { await fixture.stop() } }
        let (bmp, bmpBody) = try await fixture.get(fixture.url("w:100", "/photo.jpg", suffix: "@bmp"))
        #expect(bmp.statusCode == 200 && bmp.headers[.contentType] == "image/bmp")
        #expect(try ImageCodersManager.shared.decode(bmpBody).width == 100)
        let (ico, icoBody) = try await fixture.get(fixture.url("rs:fill:64:64", "/photo.jpg", suffix: "@ico"))
        #expect(ico.statusCode == 200 && ico.headers[.contentType] == "image/vnd.microsoft.icon")
        #expect(try ImageCodersManager.shared.decode(icoBody).width == 64)
        let (tiff, tiffBody) = try await fixture.get(fixture.url("w:100", "/photo.jpg", suffix: "@tiff"))
        #expect(tiff.statusCode == 200 && tiff.headers[.contentType] == "image/tiff")
        #expect(try ImageCodersManager.shared.decode(tiffBody).width == 100)
        let (tooBig, _) = try await fixture.get(fixture.url("w:300", "/photo.jpg", suffix: "@ico"))
        #expect(tooBig.statusCode == 422)
        fixture.origin.setRoute("/picture.bmp", .data(bmpBody, contentType: "image/bmp"))
        let (fromBMP, fromBMPBody) = try await fixture.get(fixture.url("w:50", "/picture.bmp", suffix: "@png"))
        let fromBMPWidth = try ImageCodersManager.shared.decode(fromBMPBody).width
        #expect(fromBMP.statusCode == 200 && fromBMPWidth == 50)
        // Progressive JPEG: a SOF2 marker; interlaced PNG: IHDR's interlace byte is 1.
        let (_, jpeg) = try await fixture.get(fixture.url("w:100", "/photo.jpg", suffix: "@jpg"))
        let bytes = [UInt8](jpeg)
        #expect(zip(bytes, bytes.dropFirst()).contains { $0 == 0xFF && $1 == 0xC2 }, "SOF2")
        #expect(!zip(bytes, bytes.dropFirst()).contains { $0 == 0xFF && $1 == 0xC0 }, "no baseline SOF0")
        let (_, png) = try await fixture.get(fixture.url("w:100", "/photo.jpg", suffix: "@png"))
        #expect(png.count > 28 && png[28] == 1, "Adam7")
        #expect(try ImageCodersManager.shared.decode(png).width == 100)
        await fixture.stop()
    }
}
