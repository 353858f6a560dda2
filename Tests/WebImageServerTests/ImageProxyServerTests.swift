import Foundation
import Testing
import WebImageCoders
import WebImageHTTP
import WebImageOrigin
import WebImageTestEncoders
import WebImageTestSupport

@testable import WebImageServer

/// A real proxy on 127.0.0.1:0 in front of a real origin on 127.0.0.1, requested over HTTP.
@Suite("webimage serve: the proxy over HTTP", .timeLimit(.minutes(3)))
struct ImageProxyServerTests {
    static let keyHex = "943b421c9eb07c830af81030552c86009268de4e532ba2ee2eab8247c6da0881"
    static let saltHex = "520f986b998545b4785e0defbc4f3c1203f22de2374a3d53cb7a7fe9fea309c5"

    struct Fixture {
        let origin: OriginServer
        let server: ImageProxyServer
        let proxy: ImageProxy
        let signer: URLSigner
        let folder: TemporaryDirectory
        let session = {
            var configuration = HTTPSession.Configuration()
            configuration.maximumConnectionsPerHost = 16  // concurrent requests in the load tests
            return HTTPSession(configuration: configuration)
        }()

        /// The proxy URL for `options` and the origin's `path`, signed.
        func url(
            _ options: String,
            _ path: String,
            suffix: String = "",
            info: Bool = false,
            sourceHost: String? = nil
        ) -> String {
            var source = origin.url(path).absoluteString
            if let sourceHost { source = source.replacingOccurrences(of: "127.0.0.1", with: sourceHost) }
            let signedPath = "/\(options)\(options.isEmpty ? "" : "/")plain/\(source)\(suffix)"
            return server.baseURL + (info ? "/info" : "") + "/" + signer.signature(for: signedPath) + signedPath
        }

        func get(_ url: String, headers: HTTPFields = [:]) async throws -> (HTTPSession.Response, Data) {
            let request = HTTPSession.Request(url: try #require(URL(string: url)), headers: headers)
            let (data, response) = try await session.data(for: request)
            return (response, data)
        }

        func stop() async {
            try? await session.shutdown()
            await server.stop()
            await origin.stop()
            folder.remove()
        }
    }

    static func start(
        metrics: Bool = false,
        gracePeriod: Duration? = nil,
        _ configure: (inout ImageProxyConfiguration) -> Void = { _ in }
    ) async throws -> Fixture {
        let signer = try URLSigner(pairs: [try .init(keyHex: keyHex, saltHex: saltHex)])
        var configuration = ImageProxyConfiguration(signer: signer)
        configuration.sourcePolicy.allowsLoopback = true
        // Tests check behaviour, not speed: a debug build on a busy 2-core machine must not hit
        // the processing or download timeout (tests of a timeout set their own).
        configuration.limits.processingTimeout = .seconds(120)
        configuration.limits.downloadTimeout = .seconds(60)
        configure(&configuration)
        let folder = try TemporaryDirectory(prefix: "webimage-serve")
        let manager = ImageProxy.makeManager(configuration: configuration, cacheDirectory: folder.url)
        let proxy = ImageProxy(configuration: configuration, manager: manager)
        let server = try await ImageProxyServer.start(
            proxy: proxy,
            metrics: metrics ? ("127.0.0.1", 0) : nil,
            gracePeriod: gracePeriod
        )
        let origin = try await OriginServer.start()
        let sources = try await FixtureSources.shared
        origin.setRoute("/photo.jpg", .data(sources.photo, contentType: "image/jpeg", cacheControl: "max-age=86400"))
        origin.setRoute("/text", .data(Data("not an image".utf8), contentType: "text/plain"))
        origin.setRoute("/translucent.heic", .data(sources.translucentHEIC, contentType: "image/heic"))
        origin.setRoute("/opaque.heic", .data(sources.opaqueHEIC, contentType: "image/heic"))
        return Fixture(origin: origin, server: server, proxy: proxy, signer: signer, folder: folder)
    }

    /// The fixture's source images, made once for every test (on a thread of their own: their
    /// pixels and encodes took the pool's threads from the suites starting beside them).
    struct FixtureSources: Sendable {
        var photo: Data
        var translucentHEIC: Data
        var opaqueHEIC: Data

        static let made = Task {
            try await onOwnThread {
                FixtureSources(
                    photo: try JPEGCoder().encode(
                        DecodedImage(bitmap: GeneratedImages.gradient(width: 800, height: 600), format: .jpeg),
                        as: .jpeg,
                        options: .init(quality: 0.9, maxEncodeDuration: nil)
                    ),
                    translucentHEIC: try HEIFTestEncoder.encode(
                        GeneratedImages.translucentGradient(width: 64, height: 48)
                    ),
                    opaqueHEIC: try HEIFTestEncoder.encode(GeneratedImages.gradient(width: 64, height: 48))
                )
            }
        }

        static var shared: FixtureSources {
            get async throws { try await made.value }
        }
    }

    @Test("Signed requests resize and convert; the same URL gives the same bytes and ETag; 304 on If-None-Match")
    func resizes() async throws {
        let fixture = try await Self.start()
        defer { Task { await fixture.stop() } }
        let (response, body) = try await fixture.get(fixture.url("rs:fit:300:200", "/photo.jpg", suffix: "@webp"))
        #expect(response.statusCode == 200)
        #expect(response.headers[.contentType] == "image/webp")
        #expect(response.headers[.cacheControl] == "public, max-age=31536000")
        #expect(response.headers[.vary] == nil, "no negotiation: Accept is never named")
        let image = try ImageCodersManager.shared.decode(body)
        #expect(image.format == .webp && image.width == 267 && image.height == 200)
        let etag = try #require(response.headers[.eTag])
        let (again, sameBody) = try await fixture.get(fixture.url("rs:fit:300:200", "/photo.jpg", suffix: "@webp"))
        #expect(again.headers[.eTag] == etag && sameBody == body)
        let (notModified, empty) = try await fixture.get(
            fixture.url("rs:fit:300:200", "/photo.jpg", suffix: "@webp"),
            headers: [.ifNoneMatch: etag]
        )
        #expect(notModified.statusCode == 304 && empty.isEmpty)
        #expect(fixture.origin.requests.count == 1, "the original is fetched once, then read from the disk cache")
        let (fill, filled) = try await fixture.get(fixture.url("rs:fill:100:100/q:60", "/photo.jpg"))
        #expect(fill.headers[.contentType] == "image/jpeg")
        let square = try ImageCodersManager.shared.decode(filled)
        #expect(square.width == 100 && square.height == 100)
        await fixture.stop()
    }

    // Before, the fallback was chosen before decoding as if no source had alpha: a translucent
    // HEIC came out as an opaque JPEG.
    @Test("A source we cannot write comes out as PNG when it has alpha, JPEG when it has none")
    func unwritableSources() async throws {
        let fixture = try await Self.start()
        defer { Task { await fixture.stop() } }
        let (translucent, body) = try await fixture.get(fixture.url("w:32", "/translucent.heic"))
        #expect(translucent.statusCode == 200 && translucent.headers[.contentType] == "image/png")
        let image = try ImageCodersManager.shared.decode(body)
        #expect(image.width == 32 && image.hasAlpha && image.bitmap.containsTransparency)
        let (opaque, _) = try await fixture.get(fixture.url("w:32", "/opaque.heic"))
        #expect(opaque.headers[.contentType] == "image/jpeg")
        await fixture.stop()
    }

    @Test("Errors: JSON bodies with the right status, never cached for long")
    func errors() async throws {
        let fixture = try await Self.start()
        defer { Task { await fixture.stop() } }
        func expectFailure(_ url: String, status: Int, code: String) async throws {
            let (response, body) = try await fixture.get(url)
            #expect(response.statusCode == status, "\(url)")
            #expect(response.headers[.contentType] == "application/json")
            #expect(response.headers[.cacheControl] == "no-cache")
            #expect(response.headers[HTTPField.Name("X-Content-Type-Options")!] == "nosniff")
            let object = try JSONSerialization.jsonObject(with: body) as? [String: [String: String]]
            #expect(object?["error"]?["code"] == code, "\(String(decoding: body, as: UTF8.self))")
        }
        let good = fixture.url("w:100", "/photo.jpg")
        let tampered = good.replacingOccurrences(of: "/w:100/", with: "/w:101/")
        try await expectFailure(tampered, status: 403, code: "badSignature")
        try await expectFailure(fixture.url("w:abc", "/photo.jpg"), status: 400, code: "badOption")
        try await expectFailure(fixture.url("zoom:0", "/photo.jpg"), status: 400, code: "badOption")
        try await expectFailure(fixture.url("watermark:1", "/photo.jpg"), status: 400, code: "badOption")
        try await expectFailure(fixture.url("w:100", "/missing.jpg"), status: 404, code: "sourceNotFound")
        try await expectFailure(fixture.url("w:100", "/text"), status: 422, code: "notAnImage")
        try await expectFailure(fixture.url("w:100", "/photo.jpg", suffix: "@svg"), status: 400, code: "badURL")
        try await expectFailure(fixture.url("rs:fit:9000:9000:1", "/photo.jpg"), status: 422, code: "limitExceeded")
        // The signature is checked before anything is parsed: garbage is 403, and not echoed.
        try await expectFailure(fixture.server.baseURL + "/onlyone", status: 403, code: "badSignature")
        let garbage = "/zz%zz/<script>alert(1)</script>/w:abc/plain/%%%"
        try await expectFailure(fixture.server.baseURL + garbage, status: 403, code: "badSignature")
        let (_, garbageBody) = try await fixture.get(fixture.server.baseURL + garbage)
        #expect(!String(decoding: garbageBody, as: UTF8.self).contains("script"))
        let (health, body) = try await fixture.get(fixture.server.baseURL + "/health")
        // Healthy once every output codec wrote an image and read it back.
        let healthObject = try JSONSerialization.jsonObject(with: body) as? [String: Any]
        #expect(health.statusCode == 200 && healthObject?["status"] as? String == "ok")
        #expect(
            Set(healthObject?["codecs"] as? [String] ?? []) == [
                "avif", "bmp", "gif", "ico", "jpeg", "jxl", "png", "tiff", "webp",
            ]
        )
        #expect(health.headers[.cacheControl] == "no-cache")
        let (result, _) = try await fixture.get(good)
        #expect(result.statusCode == 200 && result.headers[HTTPField.Name("X-Content-Type-Options")!] == "nosniff")
        await fixture.stop()
    }

    @Test("Loopback sources are refused unless allowed, with no request to the origin")
    func loopbackRefused() async throws {
        let fixture = try await Self.start { $0.sourcePolicy.allowsLoopback = false }
        defer { Task { await fixture.stop() } }
        let (response, body) = try await fixture.get(fixture.url("w:100", "/photo.jpg"))
        #expect(response.statusCode == 403)
        #expect(String(decoding: body, as: UTF8.self).contains("sourceNotAllowed"))
        #expect(fixture.origin.requests.isEmpty)
        await fixture.stop()
    }

    @Test("A host name that resolves to a refused address is refused at the connection, before a request is sent")
    func dnsRebinding() async throws {
        // This machine's own name: not a loopback spelling, so only the connected address tells.
        let name = ProcessInfo.processInfo.hostName
        let addresses = Self.resolve(name)
        try #require(!addresses.isEmpty, "this machine's name '\(name)' must resolve (see /etc/hosts)")
        let strict = try await Self.start { $0.sourcePolicy.allowsLoopback = false }
        let (response, body) = try await strict.get(strict.url("w:100", "/photo.jpg", sourceHost: name))
        let text = String(decoding: body, as: UTF8.self)
        #expect(response.statusCode == 403, "\(text)")
        #expect(text.contains("sourceNotAllowed") && text.contains("is not allowed"), "\(text)")
        #expect(strict.origin.requests.isEmpty)
        await strict.stop()
        // Where the name is this machine's loopback, allowing loopback lets the same URL through.
        if addresses.allSatisfy({ IPAddress($0)?.kind == .loopback }) {
            let lenient = try await Self.start()
            let (allowed, _) = try await lenient.get(lenient.url("w:100", "/photo.jpg", sourceHost: name))
            #expect(allowed.statusCode == 200)
            await lenient.stop()
        }
    }

    /// The addresses `name` resolves to, as text.
    static func resolve(_ name: String) -> [String] {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(name, nil, &hints, &list) == 0 else { return [] }
        defer { freeaddrinfo(list) }
        var addresses: [String] = []
        var entry = list
        while let current = entry {
            var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            if getnameinfo(
                current.pointee.ai_addr,
                current.pointee.ai_addrlen,
                &host,
                socklen_t(host.count),
                nil,
                0,
                NI_NUMERICHOST
            ) == 0 {
                addresses.append(String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
            }
            entry = current.pointee.ai_next
        }
        return addresses
    }

    @Test("Negotiation picks AVIF then WebP from Accept and says Vary: Accept; /info describes the source")
    func negotiationAndInfo() async throws {
        let fixture = try await Self.start { $0.formatNegotiation = true }
        defer { Task { await fixture.stop() } }
        let (webp, _) = try await fixture.get(fixture.url("w:100", "/photo.jpg"), headers: [.accept: "image/webp,*/*"])
        #expect(webp.headers[.contentType] == "image/webp" && webp.headers[.vary] == "Accept")
        let (plain, _) = try await fixture.get(fixture.url("w:100", "/photo.jpg"), headers: [.accept: "*/*"])
        #expect(plain.headers[.contentType] == "image/jpeg" && plain.headers[.vary] == "Accept")
        let (info, body) = try await fixture.get(fixture.url("", "/photo.jpg", info: true))
        #expect(info.statusCode == 200)
        let object = try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any])
        #expect(
            object["width"] as? Int == 800 && object["height"] as? Int == 600 && object["format"] as? String == "jpeg"
        )
        #expect((object["blurhash"] as? String)?.count == 28, "4×3 components: 28 characters")
        #expect((object["dominantColor"] as? String)?.hasPrefix("#") == true)
        await fixture.stop()
    }
}
