import Foundation
import Testing
import WebImageCoders
import WebImageHTTP
import WebImageOrigin
import WebImageTestEncoders
import WebImageTestSupport

@testable import WebImageServer

/// The originals cache follows the source's caching headers: a changed source reaches new
/// variants once the kept copy's freshness ends, and not before.
@Suite("webimage serve: source freshness", .timeLimit(.minutes(3)))
struct ProxySourceFreshnessTests {
    static func png(_ color: RGBA) throws -> Data {
        try PNGCoder().encode(
            DecodedImage(bitmap: GeneratedImages.solid(width: 64, height: 64, color: color), format: .png),
            as: .png,
            options: .init()
        )
    }

    static func route(_ body: Data, etag: String, maxAge: Int) -> OriginRoute {
        OriginRoute(
            headers: [("Content-Type", "image/png"), ("ETag", etag), ("Cache-Control", "max-age=\(maxAge)")],
            body: body
        )
    }

    /// The blue channel of the variant's first pixel.
    static func blue(_ fixture: ImageProxyServerTests.Fixture, _ options: String, _ path: String) async throws -> UInt8
    {
        let (response, body) = try await fixture.get(fixture.url(options, path, suffix: "@png"))
        #expect(response.statusCode == 200, "\(String(decoding: body.prefix(200), as: UTF8.self))")
        return try ImageCodersManager.shared.decode(body).bitmap[0, 0].b
    }

    @Test("Within freshness new variants use the kept original; once stale, a conditional fetch brings the new one")
    func changedSource() async throws {
        let fixture = try await ImageProxyServerTests.start()
        defer { Task { await fixture.stop() } }
        let red = try Self.png(.init(r: 255, g: 0, b: 0, a: 255))
        let blue = try Self.png(.init(r: 0, g: 0, b: 255, a: 255))
        fixture.origin.setRoute("/long.png", Self.route(red, etag: "\"r\"", maxAge: 600))
        fixture.origin.setRoute("/short.png", Self.route(red, etag: "\"r\"", maxAge: 1))
        for path in ["/long.png", "/short.png"] {
            #expect(try await Self.blue(fixture, "rs:fit:32:32", path) == 0)
        }
        for path in ["/long.png", "/short.png"] {
            fixture.origin.setRoute(path, Self.route(blue, etag: "\"b\"", maxAge: 600))
        }
        try await Task.sleep(for: .seconds(2))
        // Still fresh: the next size is made from the kept red original, with no request.
        #expect(try await Self.blue(fixture, "rs:fit:16:16", "/long.png") == 0)
        #expect(fixture.origin.requestCount(for: "/long.png") == 1)
        // Stale: revalidated with the kept ETag; the origin's new image makes the new size.
        #expect(try await Self.blue(fixture, "rs:fit:16:16", "/short.png") == 255)
        #expect(fixture.origin.requestCount(for: "/short.png") == 2)
        #expect(fixture.origin.requests.last { $0.path == "/short.png" }?.header("if-none-match") == "\"r\"")
    }
}
