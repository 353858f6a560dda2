import Foundation
import Testing
import WebImageCoders
import WebImageHTTP
import WebImageOrigin
import WebImageTestSupport

@testable import WebImageServer

/// imgproxy's rotate, flip, dpr, zoom, min-width/min-height, padding, pixelate,
/// extend_aspect_ratio, format_quality, expires, filename and return_attachment, over HTTP
/// against the 800×600 gradient photo (red grows left to right, green top to bottom).
@Suite("webimage serve: layout and delivery options", .timeLimit(.minutes(3)))
struct ProxyLayoutOptionsTests {
    typealias Fixture = ImageProxyServerTests.Fixture

    static func image(_ fixture: Fixture, _ options: String) async throws -> DecodedImage {
        try await ProxyOptionsOverHTTPTests.image(fixture, options)
    }

    static func size(_ image: DecodedImage) -> [Int] { [image.width, image.height] }

    /// Whether two results are the same picture (a Bool: Swift Testing would diff the arrays).
    static func same(_ a: DecodedImage, _ b: DecodedImage) -> Bool {
        a.width == b.width && a.height == b.height && a.bitmap.pixels == b.bitmap.pixels
    }

    @Test("rotate takes any multiple of 90; flip mirrors after it; dpr and zoom scale")
    func turnsAndScales() async throws {
        let fixture = try await ImageProxyServerTests.start()
        defer { Task { await fixture.stop() } }
        for (options, reference) in [
            ("rot:-90/w:200", "rot:270/w:200"), ("rot:450/w:200", "rot:90/w:200"), ("rot:360/w:200", "w:200"),
            ("fl:1:1/w:200", "rot:180/w:200"),
        ] {
            let same = Self.same(try await Self.image(fixture, options), try await Self.image(fixture, reference))
            #expect(same, "\(options) should equal \(reference)")
        }
        let plain = try await Self.image(fixture, "w:200")
        let mirrored = try await Self.image(fixture, "fl:1/w:200")
        #expect(mirrored.bitmap[0, 75] == plain.bitmap[199, 75] && mirrored.bitmap[199, 10] == plain.bitmap[0, 10])
        let upsideDown = try await Self.image(fixture, "fl:0:1/w:200")
        #expect(upsideDown.bitmap[100, 0] == plain.bitmap[100, 149])
        for (options, size) in [
            ("dpr:5/w:100", [500, 375]), ("dpr:0.5/w:400", [200, 150]), ("z:0.5", [400, 300]),
            ("rs:fit:400:400/z:0.5", [200, 150]), ("z:0.5:0.25", [400, 150]), ("dpr:2/z:0.5/w:200", [200, 150]),
        ] {
            #expect(Self.size(try await Self.image(fixture, options)) == size, "\(options)")
        }
        for refused in ["rot:45", "dpr:0", "dpr:-1", "z:0", "fl:x"] {
            let (response, _) = try await fixture.get(fixture.url(refused, "/photo.jpg", suffix: "@png"))
            #expect(response.statusCode == 400, "\(refused)")
        }
        await fixture.stop()
    }

    @Test("min-width and min-height raise the scale, and the other requested side crops")
    func minimumSizes() async throws {
        let fixture = try await ImageProxyServerTests.start()
        defer { Task { await fixture.stop() } }
        for (options, size) in [
            ("h:100/mw:200", [200, 100]), ("w:100/mh:200", [100, 200]), ("h:150/mw:100", [200, 150]),
            ("rs:fit:100:100/min-width:50", [100, 75]), ("w:100/min-height:150", [100, 150]),
        ] {
            #expect(Self.size(try await Self.image(fixture, options)) == size, "\(options)")
        }
        await fixture.stop()
    }

    @Test("padding adds background bands (times dpr); pixelate makes equal blocks; exar pads to the box's shape")
    func paddingPixelateAndAspect() async throws {
        let fixture = try await ImageProxyServerTests.start()
        defer { Task { await fixture.stop() } }
        let padded = try await Self.image(fixture, "w:100/pd:10/bg:255:0:0")
        #expect(Self.size(padded) == [120, 95])
        #expect(padded.bitmap[5, 5] == RGBA(r: 255, g: 0, b: 0) && padded.bitmap[114, 90] == RGBA(r: 255, g: 0, b: 0))
        #expect(padded.bitmap[60, 47] != RGBA(r: 255, g: 0, b: 0))
        #expect(Self.size(try await Self.image(fixture, "w:100/pd:10:20")) == [140, 95])
        #expect(Self.size(try await Self.image(fixture, "w:100/pd:1:2:3:4")) == [106, 79])
        #expect(Self.size(try await Self.image(fixture, "dpr:2/w:100/pd:10")) == [240, 190])

        let blocks = try await Self.image(fixture, "w:100/pix:10")
        #expect(Self.size(blocks) == [100, 75])
        #expect(blocks.bitmap[0, 0] == blocks.bitmap[9, 9] && blocks.bitmap[10, 0] == blocks.bitmap[19, 9])
        #expect(blocks.bitmap[0, 0] != blocks.bitmap[90, 0], "blocks keep the gradient")
        #expect(blocks.bitmap[0, 70] == blocks.bitmap[9, 74], "the last, partial row of blocks too")

        let square = try await Self.image(fixture, "rs:fit:300:300/exar:1")
        #expect(Self.size(square) == [300, 300])
        #expect(square.bitmap[150, 5].a == 0 && square.bitmap[150, 150].a == 255 && square.bitmap[150, 295].a == 0)
        let top = try await Self.image(fixture, "rs:fit:300:300/exar:1:no")
        #expect(top.bitmap[150, 5].a == 255 && top.bitmap[150, 295].a == 0)
        #expect(Self.size(try await Self.image(fixture, "rs:fit:300:300:0:1/exar:1")) == [300, 300])
        await fixture.stop()
    }

    @Test("format_quality applies when quality is not given; expires refuses old URLs with 404")
    func qualityAndExpiry() async throws {
        let fixture = try await ImageProxyServerTests.start()
        defer { Task { await fixture.stop() } }
        func bytes(_ options: String) async throws -> Int {
            let (response, body) = try await fixture.get(fixture.url(options, "/photo.jpg", suffix: "@jpg"))
            #expect(response.statusCode == 200, "\(options)")
            return body.count
        }
        let low = try await bytes("w:400/fq:jpeg:10")
        let normal = try await bytes("w:400")
        #expect(low * 2 < normal, "fq:jpeg:10 gives \(low) bytes, the default \(normal)")
        #expect(try await bytes("w:400/fq:webp:10") == normal, "another format's quality does not apply")
        #expect(try await bytes("w:400/q:80/fq:jpeg:10") == (try await bytes("w:400/q:80")), "quality wins")

        let now = Int(Date().timeIntervalSince1970)
        let (expired, body) = try await fixture.get(fixture.url("exp:\(now - 60)/w:100", "/photo.jpg"))
        #expect(expired.statusCode == 404 && String(decoding: body, as: UTF8.self).contains("expired"))
        let (valid, _) = try await fixture.get(fixture.url("exp:\(now + 3600)/w:100", "/photo.jpg"))
        #expect(valid.statusCode == 200)
        let (never, _) = try await fixture.get(fixture.url("exp:0/w:100", "/photo.jpg"))
        #expect(never.statusCode == 200)
        await fixture.stop()
    }

    @Test("Content-Disposition: the source's name or filename, inline or attachment, never broken by a name")
    func contentDisposition() async throws {
        let fixture = try await ImageProxyServerTests.start()
        defer { Task { await fixture.stop() } }
        func disposition(_ options: String, suffix: String = "") async throws -> String? {
            let (response, _) = try await fixture.get(fixture.url(options, "/photo.jpg", suffix: suffix))
            #expect(response.statusCode == 200, "\(options)")
            return response.headers[HTTPField.Name("Content-Disposition")!]
        }
        #expect(try await disposition("w:10") == "inline; filename=\"photo.jpg\"")
        #expect(try await disposition("w:10", suffix: "@webp") == "inline; filename=\"photo.webp\"")
        #expect(try await disposition("w:10/fn:holiday/att:1") == "attachment; filename=\"holiday.jpg\"")
        // A hostile name: quotes, CR/LF and non-ASCII, given as URL-safe base64.
        let hostile = "r\u{E9}sum\u{E9} \"x\"\r\nSet-Cookie: a=b"
        let encoded = Data(hostile.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        let value = try #require(try await disposition("w:10/fn:\(encoded):1/att:1"))
        #expect(value.hasPrefix("attachment; filename=\""))
        #expect(!value.contains("\r") && !value.contains("\n") && value.filter { $0 == "\"" }.count == 2, "\(value)")
        let star = try #require(value.range(of: "filename*=UTF-8''"))
        #expect(value[star.upperBound...].removingPercentEncoding == hostile + ".jpg")
        let (bad, _) = try await fixture.get(fixture.url("w:10/fn:not!base64:1", "/photo.jpg"))
        #expect(bad.statusCode == 400)
        await fixture.stop()
    }

    @Test("max_bytes lowers the quality until the result fits; skip_processing and raw send the source as it is")
    func bytesAndPassThrough() async throws {
        let fixture = try await ImageProxyServerTests.start()
        defer { Task { await fixture.stop() } }
        let (full, fullBody) = try await fixture.get(fixture.url("w:600/q:95", "/photo.jpg", suffix: "@jpg"))
        #expect(full.statusCode == 200)
        let limit = fullBody.count / 3
        let (fitted, fittedBody) = try await fixture.get(
            fixture.url("w:600/q:95/mb:\(limit)", "/photo.jpg", suffix: "@jpg")
        )
        #expect(
            fitted.statusCode == 200 && fittedBody.count <= limit,
            "\(fittedBody.count) bytes for a limit of \(limit)"
        )
        #expect(try ImageCodersManager.shared.decode(fittedBody).width == 600)
        // A limit the result is under is encoded once, as without it (imgproxy takes any byte
        // count: 10 MB here, past the 65,535 of a dimension); a negative one is refused.
        let (roomy, roomyBody) = try await fixture.get(
            fixture.url("w:600/q:95/mb:10000000", "/photo.jpg", suffix: "@jpg")
        )
        #expect(roomy.statusCode == 200 && roomyBody == fullBody)
        let (negative, _) = try await fixture.get(fixture.url("w:600/mb:-1", "/photo.jpg", suffix: "@jpg"))
        #expect(negative.statusCode == 400)
        // A limit nothing reaches: imgproxy's steps from the default 80 (a quarter while over 3×:
        // 20, then 5) stop at the first quality of 10 or less.
        let (floor, floorBody) = try await fixture.get(fixture.url("w:600/mb:10", "/photo.jpg", suffix: "@jpg"))
        let (five, fiveBody) = try await fixture.get(fixture.url("w:600/q:5", "/photo.jpg", suffix: "@jpg"))
        #expect(floor.statusCode == 200 && five.statusCode == 200 && floorBody == fiveBody)

        let (source, _) = try await fixture.session.data(
            for: HTTPSession.Request(url: fixture.origin.url("/photo.jpg"))
        )
        for options in ["skp:jpg/w:100", "skp:png:jpeg/w:100", "raw:1/w:100"] {
            let (response, body) = try await fixture.get(fixture.url(options, "/photo.jpg"))
            #expect(response.statusCode == 200 && response.headers[.contentType] == "image/jpeg", "\(options)")
            #expect(body == source, "\(options): the source's bytes")
        }
        let (converted, convertedBody) = try await fixture.get(
            fixture.url("skp:jpg/w:100", "/photo.jpg", suffix: "@png")
        )
        #expect(converted.headers[.contentType] == "image/png" && convertedBody != source, "another format is asked")
        let (other, otherBody) = try await fixture.get(fixture.url("skp:png/w:100", "/photo.jpg"))
        let otherWidth = try ImageCodersManager.shared.decode(otherBody).width
        #expect(other.statusCode == 200 && otherWidth == 100, "processed")
        await fixture.stop()
    }
}
