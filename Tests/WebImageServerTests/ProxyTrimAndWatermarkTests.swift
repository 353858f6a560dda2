import Foundation
import Testing
import WebImageCoders
import WebImageHTTP
import WebImageOrigin
import WebImageTestSupport

@testable import WebImageServer

/// imgproxy's trim and watermark over HTTP, against generated images whose pixels say where
/// they came from.
@Suite("webimage serve: trim and watermark", .timeLimit(.minutes(1)))
struct ProxyTrimAndWatermarkTests {
    typealias Fixture = ImageProxyServerTests.Fixture

    /// 200×100: a border of `border` around a 160×60 picture at (10, 20) (left 10, right 30,
    /// top and bottom 20): red on its left half, blue on its right.
    static func framed(border: RGBA) throws -> Data {
        var bitmap = Bitmap(width: 200, height: 100, fill: border)
        for y in 20..<80 {
            for x in 10..<170 { bitmap[x, y] = x < 90 ? RGBA(r: 255, g: 0, b: 0) : RGBA(r: 0, g: 0, b: 255) }
        }
        return try ImageCodersManager.shared.encode(
            DecodedImage(frames: [.init(bitmap: bitmap)], format: .png),
            as: .png
        )
    }

    static func size(_ image: DecodedImage) -> [Int] { [image.width, image.height] }

    static func image(_ fixture: Fixture, _ options: String, _ path: String) async throws -> DecodedImage {
        let (response, body) = try await fixture.get(fixture.url(options, path, suffix: "@png"))
        try #require(response.statusCode == 200, "\(options): \(String(decoding: body.prefix(300), as: UTF8.self))")
        return try ImageCodersManager.shared.decode(body)
    }

    @Test("trim cuts the border (its colour from the corner or given), equal sides, before the resize")
    func trim() async throws {
        let fixture = try await ImageProxyServerTests.start()
        defer { Task { await fixture.stop() } }
        fixture.origin.setRoute(
            "/framed.png",
            .data(try Self.framed(border: RGBA(r: 255, g: 255, b: 255)), contentType: "image/png")
        )
        fixture.origin.setRoute(
            "/clear.png",
            .data(try Self.framed(border: RGBA(r: 0, g: 0, b: 0, a: 0)), contentType: "image/png")
        )
        let red = RGBA(r: 255, g: 0, b: 0)
        let blue = RGBA(r: 0, g: 0, b: 255)
        for (options, path) in [("t:10", "/framed.png"), ("trim:10:FFFFFF", "/framed.png"), ("t:5", "/clear.png")] {
            let trimmed = try await Self.image(fixture, options, path)
            #expect(Self.size(trimmed) == [160, 60], "\(options) \(path)")
            #expect(trimmed.bitmap[0, 0] == red && trimmed.bitmap[159, 59] == blue, "\(options) \(path)")
        }
        // Equal sides: the smaller cut (10 from the left) from the right too, so 20 of the
        // border stays on the right.
        let even = try await Self.image(fixture, "t:10::1", "/framed.png")
        #expect(Self.size(even) == [180, 60])
        #expect(even.bitmap[0, 30] == red && even.bitmap[179, 30] == RGBA(r: 255, g: 255, b: 255))
        let vertical = try await Self.image(fixture, "t:10::0:1", "/framed.png")
        #expect(Self.size(vertical) == [160, 60])
        // A colour that is not the border's: everything is content, nothing is cut.
        let uncut = try await Self.image(fixture, "t:10:000000", "/framed.png")
        #expect(Self.size(uncut) == [200, 100])
        // The resize is planned on what the trim keeps.
        let resized = try await Self.image(fixture, "t:10/w:80", "/framed.png")
        #expect(Self.size(resized) == [80, 30])
        let filled = try await Self.image(fixture, "t:10/rs:fill:40:40", "/framed.png")
        #expect(Self.size(filled) == [40, 40])
        // An empty threshold turns trim off; bad arguments are 400.
        let off = try await Self.image(fixture, "t:10/t:", "/framed.png")
        #expect(Self.size(off) == [200, 100])
        for refused in ["t:x", "t:-1", "t:10:GGGGGG", "t:10::maybe", "t:1:2:3:4:5"] {
            let (response, _) = try await fixture.get(fixture.url(refused, "/framed.png"))
            #expect(response.statusCode == 400, "\(refused)")
        }
        await fixture.stop()
    }
}
