import Foundation
import Testing
import WebImageCoders
import WebImageHTTP
import WebImageOrigin
import WebImageTestEncoders
import WebImageTestSupport

@testable import WebImageServer

/// imgproxy's trim and watermark over HTTP, against generated images whose pixels say where
/// they came from.
@Suite("webimage serve: trim and watermark", .timeLimit(.minutes(3)))
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

    static let green = RGBA(r: 0, g: 255, b: 0)

    /// A 20×10 opaque green watermark, as PNG.
    static func mark() throws -> Data {
        let bitmap = Bitmap(width: 20, height: 10, fill: green)
        return try ImageCodersManager.shared.encode(
            DecodedImage(frames: [.init(bitmap: bitmap)], format: .png),
            as: .png
        )
    }

    @Test("watermark: placed by position and offsets, blended by opacity, scaled to the result, tiled with spacing")
    func watermark() async throws {
        let mark = try Self.mark()
        let fixture = try await ImageProxyServerTests.start { $0.watermark = .data(mark) }
        defer { Task { await fixture.stop() } }
        let green = Self.green
        let corner = try await Self.image(fixture, "w:200/wm:1:soea", "/photo.jpg")
        #expect(Self.size(corner) == [200, 150])
        #expect(corner.bitmap[180, 140] == green && corner.bitmap[199, 149] == green)
        #expect(corner.bitmap[179, 139] != green && corner.bitmap[100, 75] != green)

        let offset = try await Self.image(fixture, "w:200/wm:1:nowe:5:6", "/photo.jpg")
        #expect(offset.bitmap[5, 6] == green && offset.bitmap[24, 15] == green)
        #expect(offset.bitmap[4, 6] != green && offset.bitmap[25, 15] != green && offset.bitmap[5, 5] != green)
        // Offsets are times the dpr applied.
        let doubled = try await Self.image(fixture, "w:100/dpr:2/wm:1:nowe:5:6", "/photo.jpg")
        #expect(doubled.bitmap[10, 12] == green && doubled.bitmap[9, 12] != green)

        // Half opacity: half way between the photo and green.
        let plain = try await Self.image(fixture, "w:200", "/photo.jpg")
        let half = try await Self.image(fixture, "w:200/wm:0.5", "/photo.jpg")
        let under = plain.bitmap[100, 75]
        let blended = half.bitmap[100, 75]
        #expect(abs(Int(blended.g) - (Int(under.g) + 255 + 1) / 2) <= 1 && abs(Int(blended.r) - Int(under.r) / 2) <= 1)
        #expect(half.bitmap[5, 5] == plain.bitmap[5, 5], "outside the watermark nothing changes")

        // Scale 0.5: fitted into 100×75 of the 200×150 result, so 100×50, centred.
        let scaled = try await Self.image(fixture, "w:200/wm:1:ce:0:0:0.5", "/photo.jpg")
        #expect(scaled.bitmap[51, 51] == green && scaled.bitmap[148, 98] == green)
        #expect(scaled.bitmap[48, 75] != green && scaled.bitmap[100, 48] != green)

        // Tiled with 20 and 10 pixels of spacing: a 40×20 pattern over the whole result.
        let tiled = try await Self.image(fixture, "w:200/wm:1:re:20:10", "/photo.jpg")
        var greens = 0
        var periodic = true
        for y in 0..<120 {
            for x in 0..<160 {
                let isGreen = tiled.bitmap[x, y] == green
                if isGreen { greens += 1 }
                if isGreen != (tiled.bitmap[x + 40, y] == green) || isGreen != (tiled.bitmap[x, y + 20] == green) {
                    periodic = false
                }
            }
        }
        #expect(periodic && greens == 160 * 120 / 4, "\(greens) green pixels")
        // The tiles are centred: one sits in the middle of the result.
        #expect(tiled.bitmap[100, 75] == green)

        // Watermarked and plain results have different entity tags; opacity 0 is none.
        let (marked, _) = try await fixture.get(fixture.url("w:200/wm:1", "/photo.jpg"))
        let (unmarked, _) = try await fixture.get(fixture.url("w:200", "/photo.jpg"))
        #expect(marked.headers[.eTag] != unmarked.headers[.eTag])
        let (none, _) = try await fixture.get(fixture.url("w:200/wm:0", "/photo.jpg"))
        #expect(none.headers[.eTag] == unmarked.headers[.eTag])
        for refused in ["wm:2", "wm:x", "wm:1:sm", "wm:1:ce:0:0:0", "wm:1:ce:0:0:-1", "wm:1:ce:a"] {
            let (response, _) = try await fixture.get(fixture.url(refused, "/photo.jpg"))
            #expect(response.statusCode == 400, "\(refused)")
        }
        await fixture.stop()
    }

    @Test("watermark from a URL (fetched once and kept), and refused when the server has none")
    func watermarkSources() async throws {
        let markOrigin = try await OriginServer.start()
        defer { Task { await markOrigin.stop() } }
        let mark = try Self.mark()
        markOrigin.setRoute("/mark.png", .data(mark, contentType: "image/png", cacheControl: "max-age=86400"))
        let fixture = try await ImageProxyServerTests.start { $0.watermark = .url(markOrigin.url("/mark.png")) }
        defer { Task { await fixture.stop() } }
        for width in [200, 300] {
            let image = try await Self.image(fixture, "w:\(width)/wm:1:nowe", "/photo.jpg")
            #expect(
                image.bitmap[0, 0] == Self.green && image.bitmap[19, 9] == Self.green
                    && image.bitmap[20, 10] != Self.green
            )
        }
        #expect(markOrigin.requests.count == 1, "the watermark is fetched once: \(markOrigin.requests.count)")
        await fixture.stop()

        let plain = try await ImageProxyServerTests.start()
        defer { Task { await plain.stop() } }
        let (response, body) = try await plain.get(plain.url("w:100/wm:1", "/photo.jpg"))
        #expect(response.statusCode == 400 && String(decoding: body, as: UTF8.self).contains("no watermark image"))
        await plain.stop()
        await markOrigin.stop()
    }

    @Test(
        "enforce_thumbnail renders from the HEIF's or AVIF's embedded thumbnail, sized on it; without one, the image",
        arguments: [ImageFormat.heic, .avif]
    )
    func enforceThumbnail(format: ImageFormat) async throws {
        let fixture = try await ImageProxyServerTests.start()
        defer { Task { await fixture.stop() } }
        let data = try HEIFTestEncoder.redWithBlueThumbnail(format: format)
        let path = "/thumbed.\(format.rawValue)"
        fixture.origin.setRoute(path, .data(data, contentType: format.mimeType))
        func isBlue(_ pixel: RGBA) -> Bool { pixel.b > 200 && pixel.r < 60 }
        let enforced = try await Self.image(fixture, "eth:1", path)
        #expect(Self.size(enforced) == [64, 32] && isBlue(enforced.bitmap[32, 16]), "\(format)")
        let enlarged = try await Self.image(fixture, "eth:1/w:128/el:1", path)
        #expect(Self.size(enlarged) == [128, 64] && isBlue(enlarged.bitmap[64, 32]), "\(format)")
        let plain = try await Self.image(fixture, "w:128", path)
        #expect(Self.size(plain) == [128, 64] && !isBlue(plain.bitmap[64, 32]), "\(format)")
        let photo = try await Self.image(fixture, "eth:1/w:100", "/photo.jpg")
        #expect(Self.size(photo) == [100, 75], "a source without a thumbnail is used whole")
        await fixture.stop()
    }
}
