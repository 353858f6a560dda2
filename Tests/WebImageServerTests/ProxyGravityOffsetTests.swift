import Foundation
import Testing
import WebImageCoders
import WebImageHTTP
import WebImageTestSupport

@testable import WebImageServer

/// Gravity offsets, crop gravity and extend placement as imgproxy computes them, over HTTP
/// against the 800×600 gradient photo. Each case is checked against another request that puts
/// the window at the same place another way, so whole results must be equal.
@Suite("webimage serve: gravity offsets, crop gravity and extend placement", .timeLimit(.minutes(3)))
struct ProxyGravityOffsetTests {
    static func image(_ fixture: ImageProxyServerTests.Fixture, _ options: String) async throws -> DecodedImage {
        try await ProxyOptionsOverHTTPTests.image(fixture, options)
    }

    @Test("g:TYPE:X:Y moves the fill crop (pixels, times dpr; shares of the side below 1)")
    func fillOffsets() async throws {
        let fixture = try await ImageProxyServerTests.start()
        defer { Task { await fixture.stop() } }
        // Fill 300×300 from 400×300: the window's left edge is 0 (we), 50 (ce) or 100 (ea).
        let pairs = [
            ("rs:fill:300:300/g:we:100:0", "rs:fill:300:300/g:ea"),
            ("rs:fill:300:300/g:ea:50:0", "rs:fill:300:300/g:ce"),
            ("rs:fill:300:300/g:ce:-50:0", "rs:fill:300:300/g:we"),
            ("rs:fill:300:300/g:we:0.125:0", "rs:fill:300:300/g:ce"),
            ("dpr:2/rs:fill:150:150/g:we:50:0", "rs:fill:300:300/g:ea"),
            ("rs:fill:300:300/g:we:500:0", "rs:fill:300:300/g:ea"),  // kept inside the image
        ]
        for (moved, reference) in pairs {
            let a = try await Self.image(fixture, moved)
            let b = try await Self.image(fixture, reference)
            #expect(a.width == 300 && a.height == 300, "\(moved)")
            // A Bool, not the arrays: a failing comparison of arrays this size makes the test
            // library compute their difference for minutes.
            let same = a.bitmap.pixels == b.bitmap.pixels
            #expect(same, "\(moved) should equal \(reference)")
        }
        let west = try await Self.image(fixture, "rs:fill:300:300/g:we")
        let moved = try await Self.image(fixture, "rs:fill:300:300/g:we:100:0")
        #expect(moved.bitmap[0, 150].r > west.bitmap[0, 150].r, "the window moved right: more red")
        await fixture.stop()
    }

    @Test("c:W:H:TYPE:X:Y places the source crop; without a crop gravity the main one (with offsets) does")
    func cropOffsets() async throws {
        let fixture = try await ImageProxyServerTests.start()
        defer { Task { await fixture.stop() } }
        let pairs = [
            ("c:400:300:nowe:400:300", "c:400:300:soea"),
            ("c:400:300:soea:400:300", "c:400:300:nowe"),
            ("c:400:300/g:nowe:400:300", "c:400:300:soea"),
            ("c:400:300:no:0:0.5", "c:400:300:so"),
            ("c:400:300:nowe:200:150", "c:400:300:ce"),
        ]
        for (moved, reference) in pairs {
            let a = try await Self.image(fixture, moved)
            let b = try await Self.image(fixture, reference)
            #expect(a.width == 400 && a.height == 300, "\(moved)")
            // A Bool, not the arrays: a failing comparison of arrays this size makes the test
            // library compute their difference for minutes.
            let same = a.bitmap.pixels == b.bitmap.pixels
            #expect(same, "\(moved) should equal \(reference)")
        }
        await fixture.stop()
    }

    @Test("extend places the image by its gravity and offsets (ex:1:TYPE:X:Y and rs's arguments)")
    func extendPlacement() async throws {
        let fixture = try await ImageProxyServerTests.start()
        defer { Task { await fixture.stop() } }
        func opaque(_ image: DecodedImage, _ x: Int, _ y: Int) -> Bool { image.bitmap[x, y].a == 255 }
        let centre = try await Self.image(fixture, "rs:fit:1000:1000/ex:1")
        #expect(centre.width == 1000 && centre.height == 1000)
        #expect(opaque(centre, 500, 500) && !opaque(centre, 500, 50) && !opaque(centre, 500, 950))
        let northWest = try await Self.image(fixture, "rs:fit:1000:1000:0:1:nowe")
        #expect(opaque(northWest, 5, 5) && opaque(northWest, 795, 595) && !opaque(northWest, 805, 605))
        let southEast = try await Self.image(fixture, "ex:1:soea/s:1000:1000")
        #expect(!opaque(southEast, 5, 5) && opaque(southEast, 995, 995) && opaque(southEast, 205, 405))
        let offset = try await Self.image(fixture, "rs:fit:1000:1000/ex:1:nowe:100:50")
        #expect(!opaque(offset, 95, 45) && opaque(offset, 105, 55) && opaque(offset, 895, 645))
        #expect(!opaque(offset, 905, 655))
        // dpr 2: the box and the pixel offsets double.
        let doubled = try await Self.image(fixture, "dpr:2/rs:fit:300:300/ex:1:nowe:50:25")
        let single = try await Self.image(fixture, "rs:fit:600:600/ex:1:nowe:100:50")
        #expect(doubled.width == 600 && doubled.height == 600, "\(doubled.width)×\(doubled.height)")
        let sameAsSingle = doubled.bitmap.pixels == single.bitmap.pixels
        #expect(sameAsSingle, "offsets scale with the dpr")
        #expect(!opaque(single, 95, 45) && opaque(single, 105, 55))
        let (refused, _) = try await fixture.get(fixture.url("rs:fit:1000:1000/ex:1:sm", "/photo.jpg", suffix: "@png"))
        #expect(refused.statusCode == 400)
        await fixture.stop()
    }

    @Test("The URL's extension wins over format, as in imgproxy")
    func extensionWins() async throws {
        let fixture = try await ImageProxyServerTests.start()
        defer { Task { await fixture.stop() } }
        let (response, body) = try await fixture.get(fixture.url("f:png/w:100", "/photo.jpg", suffix: "@webp"))
        #expect(response.statusCode == 200 && response.headers[.contentType] == "image/webp")
        #expect(ImageFormat(sniffing: body) == .webp)
        let (plain, _) = try await fixture.get(fixture.url("f:png/w:100", "/photo.jpg"))
        #expect(plain.headers[.contentType] == "image/png")
        await fixture.stop()
    }
}
