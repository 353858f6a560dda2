import Foundation
import Testing
import WebImage
import WebImageCoders
import WebImageHTTP
import WebImageOrigin
import WebImageTestSupport

@testable import WebImageServer

/// Processing options, presets and redirect rules as a client sees them: signed URLs over HTTP
/// against the 800×600 gradient photo (red grows left to right, green top to bottom).
@Suite("webimage serve: options, presets and redirects over HTTP", .timeLimit(.minutes(3)))
struct ProxyOptionsOverHTTPTests {
    typealias Fixture = ImageProxyServerTests.Fixture

    static func image(_ fixture: Fixture, _ options: String, suffix: String = "@png") async throws -> DecodedImage {
        let (response, body) = try await fixture.get(fixture.url(options, "/photo.jpg", suffix: suffix))
        try #require(response.statusCode == 200, "\(options): \(String(decoding: body.prefix(300), as: UTF8.self))")
        return try ImageCodersManager.shared.decode(body)
    }

    @Test("Every resizing type, enlarge, extend, dpr and crop give imgproxy's sizes")
    func resizingTypes() async throws {
        let fixture = try await ImageProxyServerTests.start()
        defer { Task { await fixture.stop() } }
        for (options, width, height) in [
            ("rs:fit:300:200", 267, 200), ("rs:auto:200:300", 200, 150), ("rs:fill:1000:1000", 800, 600),
            ("rs:fill-down:1000:1000", 600, 600), ("rs:force:300:100", 300, 100), ("w:300", 300, 225),
            ("h:150", 200, 150), ("rs:fit:1600:1600", 800, 600), ("rs:fit:1600:1600:1", 1600, 1200),
            ("s:400:400:1", 400, 300), ("rs:fit:300:300:0:1", 300, 300), ("dpr:2/w:100", 200, 150),
            ("c:200:100", 200, 100), ("c:200:100/w:100", 100, 50), ("rt:fill/w:120/h:120", 120, 120),
            ("rot:90/w:300", 300, 400),
        ] {
            let image = try await Self.image(fixture, options)
            #expect(image.width == width && image.height == height, "\(options): \(image.width)×\(image.height)")
        }
        await fixture.stop()
    }

    @Test("Every gravity keeps its part of the picture")
    func gravities() async throws {
        let fixture = try await ImageProxyServerTests.start()
        defer { Task { await fixture.stop() } }
        // Fill 300×300: 400×300 scaled, 100 columns cropped; the left column's red tells which.
        var redAtLeft: [String: UInt8] = [:]
        for gravity in ["we", "ce", "ea", "nowe", "noea", "sowe", "soea", "no", "so", "fp:0:0.5", "fp:1:0.5", "sm"] {
            let image = try await Self.image(fixture, "rs:fill:300:300/g:\(gravity)")
            #expect(image.width == 300 && image.height == 300, "\(gravity)")
            redAtLeft[gravity] = image.bitmap[0, 150].r
        }
        let west = try #require(redAtLeft["we"])
        let center = try #require(redAtLeft["ce"])
        let east = try #require(redAtLeft["ea"])
        #expect(west < 8 && center > 20 && center < 45 && east > 55 && east < 75, "\(redAtLeft)")
        #expect(redAtLeft["nowe"] == west && redAtLeft["sowe"] == west && redAtLeft["fp:0:0.5"] == west)
        #expect(redAtLeft["noea"] == east && redAtLeft["soea"] == east && redAtLeft["fp:1:0.5"] == east)
        #expect(redAtLeft["no"] == center && redAtLeft["so"] == center)
        // Fill 300×100: 300×225 scaled, 125 rows cropped; the top row's green tells which.
        var greenAtTop: [String: UInt8] = [:]
        for gravity in ["no", "ce", "so"] {
            let image = try await Self.image(fixture, "rs:fill:300:100/g:\(gravity)")
            #expect(image.width == 300 && image.height == 100, "\(gravity)")
            greenAtTop[gravity] = image.bitmap[150, 0].g
        }
        let north = try #require(greenAtTop["no"])
        let middle = try #require(greenAtTop["ce"])
        let south = try #require(greenAtTop["so"])
        #expect(north < 8 && middle > 60 && middle < 85 && south > 130 && south < 155, "\(greenAtTop)")
        await fixture.stop()
    }

    @Test("Presets: named and default ones apply; with --only-presets anything else is a 400")
    func presets() async throws {
        func preset(_ text: String) -> [ProxyOption] {
            text.split(separator: "/").compactMap { ProxyOption(segment: $0) }
        }
        let open = try await ImageProxyServerTests.start {
            $0.presets = ["thumb": preset("rs:fill:100:100"), "default": preset("f:webp")]
        }
        defer { Task { await open.stop() } }
        let (thumb, body) = try await open.get(open.url("pr:thumb", "/photo.jpg"))
        #expect(thumb.statusCode == 200 && thumb.headers[.contentType] == "image/webp")
        let image = try ImageCodersManager.shared.decode(body)
        #expect(image.width == 100 && image.height == 100)
        let (unknown, _) = try await open.get(open.url("pr:nope", "/photo.jpg"))
        #expect(unknown.statusCode == 400)
        await open.stop()

        let strict = try await ImageProxyServerTests.start {
            $0.presets = ["thumb": preset("rs:fill:100:100")]
            $0.onlyPresets = true
        }
        defer { Task { await strict.stop() } }
        let (allowed, _) = try await strict.get(strict.url("pr:thumb", "/photo.jpg"))
        #expect(allowed.statusCode == 200)
        let (refused, message) = try await strict.get(strict.url("w:50", "/photo.jpg"))
        #expect(refused.statusCode == 400)
        #expect(String(decoding: message, as: UTF8.self).contains("w"))
        await strict.stop()
    }

    @Test("A redirect to a refused host is refused (403) and the refused target gets no request")
    func refusedRedirects() async throws {
        let fixture = try await ImageProxyServerTests.start()
        defer { Task { await fixture.stop() } }
        let allowed = fixture.origin.url("/allowed/").absoluteString
        let limited = try await ImageProxyServerTests.start {
            $0.sourcePolicy.allowedPrefixes = [try! SourcePrefix(allowed)]
        }
        defer { Task { await limited.stop() } }
        // Both proxies share one origin: the limited one's own origin stays unused.
        let origin = fixture.origin
        let (_, photo) = try await fixture.get(origin.url("/photo.jpg").absoluteString)
        origin.setRoute("/allowed/photo.jpg", .data(photo, contentType: "image/jpeg"))
        origin.setRoute("/private/photo.jpg", .data(photo, contentType: "image/jpeg"))
        origin.setRoute("/allowed/out", .redirect(to: origin.url("/private/photo.jpg").absoluteString))
        origin.setRoute("/allowed/private-net", .redirect(to: "http://10.0.0.1/photo.jpg"))
        origin.setRoute("/allowed/in", .redirect(to: origin.url("/allowed/photo.jpg").absoluteString))
        func get(_ path: String) async throws -> (Int, String) {
            let signedPath = "/w:50/plain/\(origin.url(path).absoluteString)"
            let url = limited.server.baseURL + "/" + limited.signer.signature(for: signedPath) + signedPath
            let (response, body) = try await limited.get(url)
            return (response.statusCode, String(decoding: body, as: UTF8.self))
        }
        let (outside, outsideBody) = try await get("/allowed/out")
        #expect(outside == 403 && outsideBody.contains("sourceNotAllowed"), "\(outsideBody)")
        #expect(origin.requestCount(for: "/private/photo.jpg") == 0)
        let (privateNet, privateBody) = try await get("/allowed/private-net")
        #expect(privateNet == 403 && privateBody.contains("10.0.0.1"), "\(privateBody)")
        let (inside, _) = try await get("/allowed/in")
        #expect(inside == 200)
        #expect(origin.requestCount(for: "/allowed/photo.jpg") == 1)
        await limited.stop()
        await fixture.stop()
    }

    @Test(
        "An animated source stays animated in GIF, WebP and PNG, within --max-animation-frames; JPEG takes the first frame"
    )
    func animations() async throws {
        // Canvas-sized frames, each with its own mark (a frame identical to the one before
        // would be folded into it by the WebP encoder).
        let frames = (0..<5).map { index in
            var bitmap = GeneratedImages.gradient(width: 80, height: 60)
            for x in 0..<20 { bitmap[x + index * 12, 30] = RGBA(r: 255, g: 0, b: 0) }
            return DecodedImage.Frame(bitmap: bitmap, duration: 0.1 * Double(index + 1))
        }
        let gif = try GIFCoder().encode(
            DecodedImage(frames: frames, format: .gif),
            as: .gif,
            options: .init(maxEncodeDuration: nil)  // a busy machine must not fail the fixture
        )
        let fixture = try await ImageProxyServerTests.start { $0.limits.maxAnimationFrames = 3 }
        defer { Task { await fixture.stop() } }
        fixture.origin.setRoute("/dance.gif", .data(gif, contentType: "image/gif"))
        for (suffix, type) in [("", "image/gif"), ("@webp", "image/webp"), ("@png", "image/png")] {
            let (response, body) = try await fixture.get(fixture.url("w:40", "/dance.gif", suffix: suffix))
            #expect(response.statusCode == 200 && response.headers[.contentType] == type, "\(suffix)")
            let image = try ImageCodersManager.shared.decode(body)
            #expect(image.frames.count == 3, "\(suffix): \(image.frames.count) frames")
            #expect(image.frames.map { ($0.duration * 100).rounded() } == [10, 20, 30], "\(suffix)")
            #expect(image.width == 40, "\(suffix)")
        }
        let (still, body) = try await fixture.get(fixture.url("w:40", "/dance.gif", suffix: "@jpg"))
        #expect(still.headers[.contentType] == "image/jpeg")
        #expect(try ImageCodersManager.shared.decode(body).frames.count == 1)
        let (info, facts) = try await fixture.get(fixture.url("", "/dance.gif", info: true))
        #expect(info.statusCode == 200)
        let object = try JSONSerialization.jsonObject(with: facts) as? [String: Any]
        #expect(object?["frames"] as? Int == 5 && object?["animated"] as? Bool == true, "\(object ?? [:])")
        await fixture.stop()
    }
}

@Suite("webimage serve: animations a frame at a time", .timeLimit(.minutes(3)))
struct FrameByFrameRenderTests {
    @Test(
        "An animation over the memory budget whole is resized a frame at a time: every frame, its duration, the loop count"
    )
    func overBudgetAnimation() async throws {
        // 300×300 × 60 frames is 21.6 MB decoded whole, over a 12 MB budget; one frame's
        // canvases (1 MB) and the results fit.
        // Made off the cooperative pool: the other suites' servers need its threads.
        let source = try await onOwnThread { GIFBuilder.checkerAnimation(width: 300, height: 300, frames: 60) }
        let sourceDurations = try AnimatedImage(data: source).info.durations.map { ($0 * 100).rounded() }
        let fixture = try await ImageProxyServerTests.start { configuration in
            configuration.memoryBudget = DecodingMemoryBudget(limit: 12_000_000)
            configuration.limits.maxAnimationFrames = 100
        }
        defer { Task { await fixture.stop() } }
        fixture.origin.setRoute("/big.gif", .data(source, contentType: "image/gif"))
        for (suffix, type) in [("", "image/gif"), ("@webp", "image/webp"), ("@avif", "image/avif")] {
            let (response, body) = try await fixture.get(fixture.url("rs:fit:64:64", "/big.gif", suffix: suffix))
            #expect(response.statusCode == 200 && response.headers[.contentType] == type, "\(suffix)")
            let image = try ImageCodersManager.shared.decode(body)
            #expect(image.width == 64 && image.height == 64, "\(suffix)")
            #expect(image.loopCount == 0, "\(suffix)")
            // WebP folds a frame identical to the one before into its duration; none is here.
            #expect(image.frames.count == 60, "\(suffix): \(image.frames.count) frames")
            #expect(image.frames.map { ($0.duration * 100).rounded() } == sourceDurations, "\(suffix)")
        }
        // APNG sources and AVIF sequences (reached through libavif's decoder) are read a frame at a time too.
        var avifOptions = ImageEncodingOptions(quality: 0.5)
        avifOptions.avifSpeed = 9
        for (format, options) in [(ImageFormat.png, ImageEncodingOptions()), (.avif, avifOptions)] {
            let other = try await onOwnThread {
                try ImageCodersManager.shared.encode(
                    try ImageCodersManager.shared.decode(source),
                    as: format,
                    options: options
                )
            }
            let path = "/big.\(format.rawValue)"
            fixture.origin.setRoute(path, .data(other, contentType: format.mimeType))
            let (response, webp) = try await fixture.get(fixture.url("rs:fit:64:64", path, suffix: "@webp"))
            #expect(response.statusCode == 200, "\(format): \(String(decoding: webp.prefix(300), as: UTF8.self))")
            if response.statusCode == 200 {
                let image = try ImageCodersManager.shared.decode(webp)
                #expect(image.frames.count == 60 && image.width == 64, "\(format)")
                #expect(image.frames.map { ($0.duration * 100).rounded() } == sourceDurations, "\(format)")
            }
        }
        // APNG output is written a frame at a time too (over the budget whole, it was refused).
        let (apng, body) = try await fixture.get(fixture.url("rs:fit:64:64", "/big.gif", suffix: "@png"))
        #expect(apng.statusCode == 200 && apng.headers[.contentType] == "image/png")
        if apng.statusCode == 200 {
            let image = try ImageCodersManager.shared.decode(body)
            #expect(image.frames.count == 60 && image.width == 64 && image.loopCount == 0)
            #expect(image.frames.map { ($0.duration * 100).rounded() } == sourceDurations)
        }
        await fixture.stop()
    }

    @Test("--max-animation-frame-resolution checks an animation a frame at a time instead of its frames summed")
    func frameResolutionLimit() async throws {
        // 300×300 × 60 frames: 0.09 megapixels a frame, 5.4 summed.
        let source = try await onOwnThread { GIFBuilder.checkerAnimation(width: 300, height: 300, frames: 60) }
        let still = try await onOwnThread { GIFBuilder.checkerAnimation(width: 1200, height: 1000, frames: 1) }
        let cases: [(summed: Double, perFrame: Double, animation: Int, still: Int, message: String)] = [
            (1, 0, 422, 422, "5.4 megapixels (60 frames summed), over the limit of 1.0 (--max-src-resolution)"),
            (1, 0.1, 200, 422, ""),
            (1, 0.05, 422, 422, "each frame of the source has 0.1 megapixels, over the frame limit of 0.05"),
        ]
        for limits in cases {
            let fixture = try await ImageProxyServerTests.start { configuration in
                configuration.limits.maxSourceResolution = limits.summed
                configuration.limits.maxAnimationFrameResolution = limits.perFrame
            }
            defer { Task { await fixture.stop() } }
            fixture.origin.setRoute("/long.gif", .data(source, contentType: "image/gif"))
            fixture.origin.setRoute("/still.gif", .data(still, contentType: "image/gif"))
            let (response, body) = try await fixture.get(fixture.url("rs:fit:64:64", "/long.gif"))
            #expect(response.statusCode == limits.animation, "\(limits)")
            if !limits.message.isEmpty {
                #expect(String(decoding: body, as: UTF8.self).contains(limits.message), "\(limits)")
            }
            if response.statusCode == 200 {
                #expect(try AnimatedImage(data: body).frameCount == 60)
            }
            // A still image (1.2 megapixels) is held to --max-src-resolution whatever the frame limit.
            let (stillResponse, _) = try await fixture.get(fixture.url("rs:fit:64:64", "/still.gif"))
            #expect(stillResponse.statusCode == limits.still, "\(limits)")
            await fixture.stop()
        }
    }

    @Test("Resolution limits too large for a pixel count (10³⁰ megapixels, infinity) are no limit, not a crash")
    func hugeResolutionLimits() async throws {
        for limit in [1e30, .infinity, Double(Int.max)] {
            let fixture = try await ImageProxyServerTests.start { configuration in
                configuration.limits.maxSourceResolution = limit
                configuration.limits.maxResultResolution = limit
            }
            defer { Task { await fixture.stop() } }
            fixture.origin.setRoute(
                "/small.gif",
                .data(GIFBuilder.checkerAnimation(width: 40, height: 30, frames: 2), contentType: "image/gif")
            )
            for options in ["rs:fit:20:20", "rs:fill:2000:2000/el:1", "f:best"] {
                let (response, _) = try await fixture.get(fixture.url(options, "/small.gif"))
                #expect(response.statusCode == 200, "\(limit) \(options)")
            }
            await fixture.stop()
        }
    }

    @Test("The processing deadline stops a frame-by-frame render between frames: 504, and the server answers after")
    func deadlineBetweenFrames() async throws {
        // 300 frames of 600×600, each enlarged to 2000×2000 (4 megapixels resampled and
        // WebP-encoded a frame: tens of milliseconds even with libwebp on a fast idle machine).
        // The render would take half a minute or more: far beyond the 2 s deadline on any machine.
        // (At 500×500 results, a fast CI machine finished all 300 frames inside the deadline.)
        let source = try await onOwnThread { GIFBuilder.checkerAnimation(width: 600, height: 600, frames: 300) }
        let budget = DecodingMemoryBudget(limit: 1 << 30)
        let fixture = try await ImageProxyServerTests.start { configuration in
            configuration.memoryBudget = budget
            configuration.limits.processingTimeout = .seconds(2)
            configuration.limits.maxAnimationFrames = 300
            configuration.limits.maxSourceResolution = 120
        }
        defer { Task { await fixture.stop() } }
        fixture.origin.setRoute("/long.gif", .data(source, contentType: "image/gif"))
        let (timedOut, _) = try await fixture.get(fixture.url("rs:fill:2000:2000/el:1", "/long.gif", suffix: "@webp"))
        #expect(timedOut.statusCode == 504)
        // The render stopped between frames: its reservation is back long before 300 frames.
        #expect(await waitUntil({ budget.bytesInUse == 0 }, timeout: .seconds(60)))
        fixture.origin.setRoute(
            "/small.gif",
            .data(GIFBuilder.checkerAnimation(width: 20, height: 20, frames: 3), contentType: "image/gif")
        )
        // A tiny render fits 2 s once it gets a worker, but the decode queue is the process's
        // and the heavy suites beside this one (in the same test process, on a machine whose
        // cores stress-ng takes) can hold it for longer: try again, each time a new cache-busted
        // URL, for up to 100 s, while those suites finish. A wedged server never answers 200.
        var statuses: [Int] = []
        let clock = ContinuousClock()
        let started = clock.now
        var attempt = 0
        while statuses.last != 200, clock.now - started < .seconds(100) {
            let (after, _) = try await fixture.get(fixture.url("rs:fit:10:10/cb:\(attempt)", "/small.gif"))
            statuses.append(after.statusCode)
            attempt += 1
        }
        #expect(statuses.last == 200, "after the stopped render: \(statuses)")
        await fixture.stop()
    }
}
