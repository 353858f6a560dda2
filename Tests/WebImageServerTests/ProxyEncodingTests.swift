import Foundation
import Testing
import WebImageCoders
import WebImageHTTP
import WebImageOrigin
import WebImageTestSupport

@testable import WebImageServer

/// What the proxy writes and at what settings: JPEG XL output, its negotiation, and the
/// encoders' speed and effort.
@Suite("webimage serve: encoders", .timeLimit(.minutes(2)))
struct ProxyEncodingTests {
    @Test("JPEG XL: @jxl and f:jxl are written by libjxl and read back at the planned size")
    func jxlOutput() async throws {
        let fixture = try await ImageProxyServerTests.start()
        defer { Task { await fixture.stop() } }
        for (options, suffix) in [("rs:fit:200:200", "@jxl"), ("rs:fit:200:200/f:jxl", "")] {
            let (response, body) = try await fixture.get(fixture.url(options, "/photo.jpg", suffix: suffix))
            #expect(response.statusCode == 200 && response.headers[.contentType] == "image/jxl", "\(options)")
            #expect(ImageFormat(sniffing: body) == .jxl)
            let image = try JXLCoder().decode(body, options: .init())
            #expect(image.width == 200 && image.height == 150, "\(options)")
        }
        await fixture.stop()
    }

    @Test("IMGPROXY_FORMAT_QUALITY's defaults: WebP 79, AVIF 63, JPEG XL 77, others the quality (80)")
    func defaultQualities() {
        let configuration = ImageProxyConfiguration(signer: nil)
        #expect(configuration.formatQuality == [.webp: 79, .avif: 63, .jxl: 77])
        #expect(configuration.defaultQuality == 80)
        #expect(configuration.encoders == ProxyEncoders())
        #expect(configuration.encoders.avifSpeed == 6 && configuration.encoders.jxlEffort == 4)
    }

    @Test("JPEG XL negotiation comes first when on and accepted, never for an animation; Vary: Accept")
    func jxlNegotiationChoice() {
        typealias Choice = OutputFormatChoice
        let safari = "image/webp,image/avif,image/jxl,image/heic,image/*;q=0.8,*/*;q=0.5"
        let all: Choice.NegotiatedFormats = [.jxl, .avif, .webp]
        #expect(
            Choice(requested: nil, source: .jpeg, hasAlpha: false, accept: safari, negotiation: all)
                == Choice(format: .jxl, variesWithAccept: true)
        )
        #expect(
            Choice(requested: nil, source: .jpeg, hasAlpha: false, accept: safari, negotiation: .jxl)
                == Choice(format: .jxl, variesWithAccept: true)
        )
        #expect(
            Choice(requested: nil, source: .jpeg, hasAlpha: false, accept: safari, negotiation: .modern).format == .avif
        )
        let animated = all.forSource(animated: true)
        #expect(animated == .modern)
        #expect(
            Choice(
                requested: nil,
                source: .gif,
                hasAlpha: true,
                accept: safari,
                negotiation: .jxl.forSource(animated: true)
            )
                == Choice(format: .gif, variesWithAccept: false)
        )
        let chrome = "image/avif,image/webp,*/*"
        #expect(
            Choice(requested: nil, source: .jpeg, hasAlpha: false, accept: chrome, negotiation: all).format == .avif
        )
        #expect(Choice.acceptBucket(safari, negotiation: all) == "jxl")
        #expect(Choice.acceptBucket(chrome, negotiation: .jxl) == "other")
        #expect(Choice.acceptBucket(chrome, negotiation: []) == "")
        var configuration = ImageProxyConfiguration(signer: nil)
        #expect(configuration.negotiatedFormats.isEmpty)
        configuration.negotiatesJXL = true
        #expect(configuration.negotiatedFormats == .jxl)
        configuration.formatNegotiation = true
        #expect(configuration.negotiatedFormats == all)
    }

    @Test("--auto-jxl over HTTP: JPEG XL for a still when Accept lists it; an animation stays animated in WebP")
    func jxlNegotiationOverHTTP() async throws {
        let fixture = try await ImageProxyServerTests.start {
            $0.formatNegotiation = true
            $0.negotiatesJXL = true
        }
        defer { Task { await fixture.stop() } }
        fixture.origin.setRoute("/two.gif", .data(try Self.twoFrameGIF(), contentType: "image/gif"))
        let accept = "image/jxl,image/webp,*/*"
        let (still, stillBody) = try await fixture.get(fixture.url("w:100", "/photo.jpg"), headers: [.accept: accept])
        #expect(still.headers[.contentType] == "image/jxl" && still.headers[.vary] == "Accept")
        #expect(try JXLCoder().decode(stillBody, options: .init()).width == 100)
        let (moving, movingBody) = try await fixture.get(fixture.url("w:20", "/two.gif"), headers: [.accept: accept])
        #expect(moving.headers[.contentType] == "image/webp" && moving.headers[.vary] == "Accept")
        #expect(try ImageCodersManager.shared.decode(movingBody).frames.count == 2)
        let (plain, _) = try await fixture.get(fixture.url("w:100", "/photo.jpg"), headers: [.accept: "image/webp"])
        #expect(plain.headers[.contentType] == "image/webp")
        await fixture.stop()
    }

    @Test("--enforce-webp over HTTP: WebP replaces the URL's @png when Accept lists it; otherwise @png; both vary")
    func enforcedFormatOverHTTP() async throws {
        let fixture = try await ImageProxyServerTests.start { $0.enforcedFormats = .webp }
        defer { Task { await fixture.stop() } }
        let url = fixture.url("w:100", "/photo.jpg", suffix: "@png")
        let (enforced, enforcedBody) = try await fixture.get(url, headers: [.accept: "image/avif,image/webp,*/*"])
        #expect(enforced.headers[.contentType] == "image/webp" && enforced.headers[.vary] == "Accept")
        #expect(ImageFormat(sniffing: enforcedBody) == .webp)
        #expect(try ImageCodersManager.shared.decode(enforcedBody).width == 100)
        let (kept, keptBody) = try await fixture.get(url, headers: [.accept: "image/png,*/*"])
        #expect(kept.headers[.contentType] == "image/png" && kept.headers[.vary] == "Accept")
        #expect(ImageFormat(sniffing: keptBody) == .png)
        #expect(enforced.headers[.eTag] != kept.headers[.eTag])
        // Without a format in the URL, enforcement negotiates as --auto-webp does.
        let (plain, _) = try await fixture.get(fixture.url("w:100", "/photo.jpg"), headers: [.accept: "image/webp"])
        #expect(plain.headers[.contentType] == "image/webp")
        await fixture.stop()
    }

    @Test("The encoders' settings reach the encoders and the ETag: another effort, other bytes and another tag")
    func encoderSettings() async throws {
        var results: [(etag: String?, body: Data)] = []
        for effort in [1, 7] {
            let fixture = try await ImageProxyServerTests.start { $0.encoders.jxlEffort = effort }
            defer { Task { await fixture.stop() } }
            let (response, body) = try await fixture.get(fixture.url("w:300", "/photo.jpg", suffix: "@jxl"))
            #expect(response.statusCode == 200)
            results.append((response.headers[.eTag], body))
            await fixture.stop()
        }
        #expect(results[0].etag != nil && results[0].etag != results[1].etag)
        #expect(results[0].body != results[1].body)
        var options = ProxyEncoders()
        options.avifSpeed = 3
        options.avifEncoder = .rav1e
        let encoding = options.options(quality: 63)
        #expect(encoding.avifSpeed == 3 && encoding.avifEncoder == .rav1e && encoding.jxlEffort == 4)
        #expect(encoding.quality == 0.63 && encoding.maxEncodeDuration == nil)
        #expect(options.fingerprint != ProxyEncoders().fingerprint)
    }

    /// A 40×40 GIF of two frames, red then blue.
    static func twoFrameGIF() throws -> Data {
        let colors: [RGBA] = [.init(r: 200, g: 0, b: 0), .init(r: 0, g: 0, b: 200)]
        return try GIFCoder().encode(
            GeneratedImages.animation(width: 40, height: 40, colors: colors, format: .gif),
            as: .gif,
            options: .init(maxEncodeDuration: nil)
        )
    }

    /// A photo-like PNG source (autoquality needs a measure that moves with quality).
    static let scene: Data = {
        let bitmap = GeneratedImages.photoLike(width: 400, height: 300, detail: 0.3)
        return try! PNGCoder().encode(DecodedImage(bitmap: bitmap, format: .png), as: .png, options: .init())
    }()

    @Test("aq:size:N keeps every result within N bytes and uses most of it", arguments: ["jpg", "webp", "avif", "jxl"])
    func autoQualityBySize(suffix: String) async throws {
        let fixture = try await ImageProxyServerTests.start()
        defer { Task { await fixture.stop() } }
        fixture.origin.setRoute("/scene.png", .data(Self.scene, contentType: "image/png"))
        let (_, high) = try await fixture.get(fixture.url("w:300/q:90", "/scene.png", suffix: "@" + suffix))
        let (_, low) = try await fixture.get(fixture.url("w:300/q:20", "/scene.png", suffix: "@" + suffix))
        let budget = (high.count + low.count) / 2
        let (response, body) = try await fixture.get(
            fixture.url("w:300/aq:size:\(budget):10:95", "/scene.png", suffix: "@" + suffix)
        )
        #expect(response.statusCode == 200, "\(suffix)")
        #expect(body.count <= budget && body.count >= budget * 8 / 10, "\(suffix): \(body.count) of \(budget)")
        #expect(try ImageCodersManager.shared.decode(body).width == 300)
        // A budget under the server's default range (imgproxy's 70–80, AVIF 60–65) is kept too.
        let (_, lowest) = try await fixture.get(fixture.url("w:300/q:2", "/scene.png", suffix: "@" + suffix))
        let tight = (lowest.count + low.count) / 2
        let (_, kept) = try await fixture.get(fixture.url("w:300/aq:size:\(tight)", "/scene.png", suffix: "@" + suffix))
        #expect(kept.count <= tight, "\(suffix): \(kept.count) over \(tight)")
        await fixture.stop()
    }

    @Test("aq:dssim: the result's DSSIM to the unencoded result meets the target; q: disables the server's default")
    func autoQualityByDSSIM() async throws {
        let fixture = try await ImageProxyServerTests.start {
            $0.autoQuality.method = .dssim
            $0.autoQuality.min = 10
            $0.autoQuality.max = 95
        }
        defer { Task { await fixture.stop() } }
        fixture.origin.setRoute("/scene.png", .data(Self.scene, contentType: "image/png"))
        let (_, lossless) = try await fixture.get(fixture.url("w:300", "/scene.png", suffix: "@png"))
        let reference = try ImageCodersManager.shared.decode(lossless).bitmap
        for (suffix, target) in [("jpg", 0.015), ("webp", 0.02)] {
            let (response, body) = try await fixture.get(
                fixture.url("w:300/aq:dssim:\(target):::0.00125", "/scene.png", suffix: "@" + suffix)
            )
            #expect(response.statusCode == 200)
            let measured = try ImageDifference.dssim(reference, ImageCodersManager.shared.decode(body).bitmap)
            #expect(measured <= target + 0.00125, "\(suffix): \(measured) for \(target)")
            #expect(measured > target / 4, "\(suffix): \(measured): the search stopped far above the quality needed")
        }
        // The server's default method applies without aq:, and q: in the URL turns it off.
        let (_, defaulted) = try await fixture.get(fixture.url("w:300", "/scene.png", suffix: "@jpg"))
        let (_, fixed) = try await fixture.get(fixture.url("w:300/q:95", "/scene.png", suffix: "@jpg"))
        let fixedQuality = try await ImageProxyServerTests.start()
        defer { Task { await fixedQuality.stop() } }
        fixedQuality.origin.setRoute("/scene.png", .data(Self.scene, contentType: "image/png"))
        let (_, plain95) = try await fixedQuality.get(fixedQuality.url("w:300/q:95", "/scene.png", suffix: "@jpg"))
        #expect(fixed == plain95 && defaulted != fixed)
        await fixedQuality.stop()
        await fixture.stop()
    }

    @Test("Bad aq: arguments are 400s naming the cause")
    func autoQualityErrors() async throws {
        let fixture = try await ImageProxyServerTests.start()
        defer { Task { await fixture.stop() } }
        for (options, cause) in [
            ("aq:size", "size needs a target in bytes"), ("aq:guess", "'guess' is not none, size, dssim"),
            ("aq:dssim:0.02:90:80", "the lowest quality (90) is above the highest (80)"),
            ("aq:dssim:0", "the target must be above 0"), ("aq:dssim:0.02:0", "qualities must be 1 to 100"),
        ] {
            let (response, body) = try await fixture.get(fixture.url("w:50/" + options, "/photo.jpg", suffix: "@jpg"))
            #expect(response.statusCode == 400, "\(options)")
            #expect(
                String(decoding: body, as: UTF8.self).contains(cause),
                "\(options): \(String(decoding: body, as: UTF8.self))"
            )
        }
        // aq:none is a fixed quality, whatever the server's default.
        let (none, _) = try await fixture.get(fixture.url("w:50/aq:none", "/photo.jpg", suffix: "@jpg"))
        #expect(none.statusCode == 200)
        await fixture.stop()
    }

    /// A flat diagram: blocks of a few colours and thin dark lines.
    static let diagram: Data = {
        let colors: [RGBA] = [
            .init(r: 255, g: 255, b: 255), .init(r: 30, g: 120, b: 200), .init(r: 240, g: 200, b: 40),
        ]
        var bitmap = GeneratedImages.blocks(width: 400, height: 300, colors: colors, blockSize: 50)
        for y in stride(from: 10, to: 300, by: 37) {
            for x in 0..<400 { bitmap[x, y] = RGBA(r: 20, g: 20, b: 20) }
        }
        return try! PNGCoder().encode(DecodedImage(bitmap: bitmap, format: .png), as: .png, options: .init())
    }()

    @Test("Complexity: a flat diagram scores under imgproxy's threshold (5.5), a photo-like image over it")
    func complexity() throws {
        let diagram = try ImageCodersManager.shared.decode(Self.diagram).bitmap
        let scene = try ImageCodersManager.shared.decode(Self.scene).bitmap
        #expect(BestFormat.complexity(of: diagram) < 1)
        #expect(BestFormat.complexity(of: scene) > 5.5)
    }

    @Test(
        "format:best: lossless for a flat diagram (smaller than a q80 JPEG), the negotiated lossy format for a photo, never one Accept lacks"
    )
    func bestFormat() async throws {
        let fixture = try await ImageProxyServerTests.start { $0.formatNegotiation = true }
        defer { Task { await fixture.stop() } }
        fixture.origin.setRoute("/scene.png", .data(Self.scene, contentType: "image/png"))
        fixture.origin.setRoute("/diagram.png", .data(Self.diagram, contentType: "image/png"))
        let browser = "image/avif,image/webp,*/*"
        // A diagram: lossless, pixel for pixel the PNG result, and smaller than JPEG at 80.
        let (flat, flatBody) = try await fixture.get(
            fixture.url("w:400", "/diagram.png", suffix: "@best"),
            headers: [.accept: browser]
        )
        let (_, png) = try await fixture.get(fixture.url("w:400", "/diagram.png", suffix: "@png"))
        let (_, jpeg) = try await fixture.get(fixture.url("w:400/q:80", "/diagram.png", suffix: "@jpg"))
        #expect(
            ["image/png", "image/webp"].contains(flat.headers[.contentType]),
            "\(String(describing: flat.headers[.contentType]))"
        )
        #expect(flat.headers[.vary] == "Accept" && flatBody.count < jpeg.count)
        let flatPixels = try ImageCodersManager.shared.decode(flatBody).bitmap.pixels
        #expect(flatPixels == (try ImageCodersManager.shared.decode(png).bitmap.pixels))
        // A photo: lossy, the negotiated AVIF (or JPEG when smaller), smaller than the q80 JPEG.
        let (photo, photoBody) = try await fixture.get(
            fixture.url("w:300", "/scene.png", suffix: "@best"),
            headers: [.accept: browser]
        )
        let (_, photoJPEG) = try await fixture.get(fixture.url("w:300/q:80", "/scene.png", suffix: "@jpg"))
        #expect(
            ["image/avif", "image/jpeg"].contains(photo.headers[.contentType]) && photoBody.count < photoJPEG.count
        )
        // Only what the client takes: without AVIF or WebP in Accept, JPEG, PNG or GIF.
        for (accept, allowed) in [
            ("*/*", ["image/jpeg", "image/png", "image/gif"]), ("image/webp", ["image/webp", "image/jpeg"]),
        ] {
            let (answer, body) = try await fixture.get(
                fixture.url("w:300/f:best", "/scene.png"),
                headers: [.accept: accept]
            )
            #expect(
                allowed.contains(answer.headers[.contentType] ?? ""),
                "\(accept): \(String(describing: answer.headers[.contentType]))"
            )
            #expect(try ImageCodersManager.shared.decode(body).width == 300)
        }
        // The ETag names the candidates: another Accept bucket, another tag.
        let (other, _) = try await fixture.get(
            fixture.url("w:300", "/scene.png", suffix: "@best"),
            headers: [.accept: "*/*"]
        )
        #expect(other.headers[.eTag] != nil && other.headers[.eTag] != photo.headers[.eTag])
        await fixture.stop()
    }

    @Test(
        "format:best by default; an animation keeps animating in the negotiated WebP; skip_processing only with allow-skips"
    )
    func bestFormatSettings() async throws {
        let fixture = try await ImageProxyServerTests.start {
            $0.formatNegotiation = true
            $0.bestFormat.byDefault = true
        }
        defer { Task { await fixture.stop() } }
        fixture.origin.setRoute("/diagram.png", .data(Self.diagram, contentType: "image/png"))
        fixture.origin.setRoute("/two.gif", .data(try Self.twoFrameGIF(), contentType: "image/gif"))
        let (byDefault, _) = try await fixture.get(
            fixture.url("w:200", "/diagram.png"),
            headers: [.accept: "image/webp"]
        )
        #expect(
            ["image/png", "image/webp"].contains(byDefault.headers[.contentType])
                && byDefault.headers[.vary] == "Accept"
        )
        let (named, _) = try await fixture.get(
            fixture.url("w:200", "/diagram.png", suffix: "@jpg"),
            headers: [.accept: "image/webp"]
        )
        #expect(named.headers[.contentType] == "image/jpeg", "a named format wins")
        let (moving, movingBody) = try await fixture.get(
            fixture.url("w:20", "/two.gif"),
            headers: [.accept: "image/webp"]
        )
        #expect(moving.headers[.contentType] == "image/webp")
        #expect(try ImageCodersManager.shared.decode(movingBody).frames.count == 2)
        let (gifOnly, _) = try await fixture.get(fixture.url("w:20", "/two.gif"), headers: [.accept: "*/*"])
        #expect(gifOnly.headers[.contentType] == "image/gif")
        // skip_processing: best processes the source unless allowed to skip.
        let (processed, processedBody) = try await fixture.get(fixture.url("w:200/skp:png", "/diagram.png"))
        #expect(processed.statusCode == 200 && processedBody != Self.diagram)
        await fixture.stop()
        let skipping = try await ImageProxyServerTests.start {
            $0.bestFormat.byDefault = true
            $0.bestFormat.allowsSkips = true
        }
        defer { Task { await skipping.stop() } }
        skipping.origin.setRoute("/diagram.png", .data(Self.diagram, contentType: "image/png"))
        let (_, skipped) = try await skipping.get(skipping.url("w:200/skp:png", "/diagram.png"))
        #expect(skipped == Self.diagram)
        await skipping.stop()
    }
}
