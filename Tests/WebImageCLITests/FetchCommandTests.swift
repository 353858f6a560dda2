import Foundation
import Testing
import WebImage
import WebImageCoders
import WebImageOrigin
import WebImageTestSupport

@Suite("webimage fetch, prefetch and cache", .serialized, .timeLimit(.minutes(2)))
struct FetchCommandTests {
    static let png: Data = try! PNGCoder().encode(
        DecodedImage(bitmap: GeneratedImages.gradient(width: 48, height: 32), format: .png),
        as: .png,
        options: .init()
    )

    /// An HTTPS origin serving `/a.png` with a certificate issued by a fresh test CA.
    static func caIssuedOrigin() async throws -> (authority: TestIdentity, server: TestIdentity, origin: OriginServer) {
        let authority = try TestCertificates.selfSigned(commonName: "swift-web-image test CA")
        let server = try TestCertificates.issued(by: authority)
        let origin = try await OriginServer.start(
            tls: .init(certificatePEM: server.certificatePEM, privateKeyPEM: server.privateKeyPEM)
        )
        origin.setRoute("/a.png", .data(Self.png, contentType: "image/png"))
        return (authority, server, origin)
    }

    @Test("fetch: 40 inputs finishing in reverse order still print in input order, each once, at any concurrency")
    func inputOrderUnderConcurrency() async throws {
        let origin = try await OriginServer.start()
        var urls: [String] = []
        for index in 0..<40 {
            // Earlier inputs answer later, so loads finish far out of input order.
            let delay = Duration.milliseconds((40 - index) % 8 * 15)
            origin.setRoute(
                "/i\(index).png",
                .data(Self.png, contentType: "image/png", behavior: .init(delay: delay))
            )
            urls.append(origin.url(index == 17 ? "/missing.png" : "/i\(index).png").absoluteString)
        }
        for concurrency in ["1", "4", "64"] {
            let run = try await CLIRunner.runDetached(
                ["fetch", "--json", "--no-disk-cache", "--concurrency", concurrency] + urls
            )
            #expect(run.status == 8, "every failure an HTTP status: the one 404 (concurrency \(concurrency))")
            let lines = try run.jsonLines()
            #expect(lines.map { $0["url"] as? String } == urls, "concurrency \(concurrency)")
            #expect(lines.filter { $0["ok"] as? Bool == false }.count == 1)
            #expect(lines[17]["ok"] as? Bool == false)
        }
    }

    @Test("fetch: lines in input order; network, then disk in a second run; item failures exit 1")
    func fetch() async throws {
        let folder = try TemporaryDirectory(prefix: "webimage-cli")
        defer { folder.remove() }
        let origin = try await OriginServer.start()
        let day = "max-age=86400"
        origin.setRoute(
            "/a.png",
            .data(Self.png, contentType: "image/png", cacheControl: day, behavior: .init(delay: .milliseconds(30)))
        )
        origin.setRoute("/b.png", .data(Self.png, contentType: "image/png", cacheControl: day))
        let cache = folder.file("cache").path
        let a = origin.url("/a.png").absoluteString
        let b = origin.url("/b.png").absoluteString
        let missing = origin.url("/missing.png").absoluteString

        let first = try await CLIRunner.runDetached([
            "fetch", "--json", "--cache-dir", cache, a, b, a, missing, "", "not a url",
        ])
        #expect(first.status == 1)
        let lines = try first.jsonLines()
        #expect(lines.map { $0["url"] as? String } == [a, b, a, missing, "", "not a url"])
        #expect(lines.map { $0["ok"] as? Bool } == [true, true, true, false, false, false])
        #expect(lines[0]["cacheType"] as? String == "none")
        #expect(lines[0]["format"] as? String == "png")
        #expect(lines[0]["width"] as? Int == 48 && lines[0]["height"] as? Int == 32)
        #expect(lines[0]["bytes"] as? Int == Self.png.count)
        #expect(["none", "memory"].contains(lines[2]["cacheType"] as? String))
        let failure = try #require(lines[3]["error"] as? [String: Any])
        #expect(failure["code"] as? String == "invalidDownloadStatusCode")
        #expect(failure["status"] as? Int == 404)
        #expect((lines[4]["error"] as? [String: Any])?["code"] as? String == "invalidURL")
        #expect((lines[5]["error"] as? [String: Any])?["code"] as? String == "invalidURL")
        #expect(origin.requestCount(for: "/a.png") == 1)

        let second = try await CLIRunner.runDetached([
            "fetch", "--json", "--cache-dir", cache, "--thumbnail", "16x16", "--output-dir", folder.file("out").path,
            "--format", "webp", b,
        ])
        #expect(second.status == 0, "\(second.stderr)")
        let line = try #require(second.jsonLines().first)
        #expect(line["width"] as? Int == 16)
        #expect(line["cacheType"] as? String == "disk", "made from the original on disk")
        let output = try #require(line["output"] as? String)
        #expect(ImageFormat(sniffing: try Data(contentsOf: URL(fileURLWithPath: output))) == .webp)

        let avif = try await CLIRunner.runDetached([
            "fetch", "--json", "--cache-dir", cache, "--output-dir", folder.file("avif").path, "--format", "avif", b,
        ])
        #expect(avif.status == 0, "\(avif.stderr)")
        let avifOutput = try #require(try avif.jsonLines().first?["output"] as? String)
        let written = try Data(contentsOf: URL(fileURLWithPath: avifOutput))
        #expect(ImageFormat(sniffing: written) == .avif && avifOutput.hasSuffix(".avif"))
        #expect(try ImageCodersManager.shared.decode(written).width == 48)

        // JPEG XL by the file's extension; --quality 100 is lossless.
        let jxlFile = folder.file("b.jxl").path
        let jxl = try await CLIRunner.runDetached(["fetch", "--cache-dir", cache, "--quality", "100", "-o", jxlFile, b])
        #expect(jxl.status == 0, "\(jxl.stderr)")
        let jxlData = try Data(contentsOf: URL(fileURLWithPath: jxlFile))
        #expect(ImageFormat(sniffing: jxlData) == .jxl)
        let lossless = try ImageCodersManager.shared.decode(jxlData)
        #expect(lossless.bitmap.pixels == (try ImageCodersManager.shared.decode(Self.png)).bitmap.pixels)

        let warm = try await CLIRunner.runDetached(["fetch", "--json", "--cache-dir", cache, b])
        #expect(try warm.jsonLines().first?["cacheType"] as? String == "disk")
        // The thumbnail was made from the original's disk entry: one download in all.
        #expect(origin.requestCount(for: "/b.png") == 1)

        let cacheOnly = try await CLIRunner.runDetached([
            "fetch", "--json", "--cache-dir", cache, "--options", "from-cache-only",
            origin.url("/never.png").absoluteString,
        ])
        #expect(cacheOnly.status == 1)
        #expect(origin.requestCount(for: "/never.png") == 0)
        await origin.stop()
    }

    @Test("Written files are the images the lines describe: thumbnails, orientation, animations, quality")
    func writtenImages() async throws {
        let folder = try TemporaryDirectory(prefix: "webimage-cli")
        defer { folder.remove() }
        func file(_ data: Data, _ name: String) throws -> String {
            try data.write(to: folder.file(name))
            return folder.file(name).absoluteString
        }
        func run(_ arguments: [String]) async throws -> (line: [String: Any], written: Data?, status: Int32) {
            let result = try await CLIRunner.runDetached(["fetch", "--json", "--no-disk-cache"] + arguments)
            let line = try #require(result.jsonLines().first)
            let written = (line["output"] as? String).flatMap { try? Data(contentsOf: URL(fileURLWithPath: $0)) }
            return (line, written, result.status)
        }
        let out = folder.file("out").path

        // A thumbnail without --format: the thumbnail, in the source's format (before: the original bytes).
        let png = try file(Self.png, "wide.png")
        let thumbnail = try await run(["--thumbnail", "16x16", "--output-dir", out, png])
        let thumbnailBytes = try #require(thumbnail.written)
        #expect(ImageFormat(sniffing: thumbnailBytes) == .png)
        let thumbnailImage = try ImageCodersManager.shared.decode(thumbnailBytes)
        #expect(thumbnailImage.width == 16 && thumbnailImage.height == 11)
        #expect(thumbnail.line["width"] as? Int == 16 && thumbnail.line["height"] as? Int == 11)

        // An orientation-8 JPEG, 40×20 as stored, becomes an upright 20×40 PNG; --no-auto-orient keeps 40×20.
        let stored = GeneratedImages.blocks(
            width: 40,
            height: 20,
            colors: [RGBA(r: 250, g: 0, b: 0), RGBA(r: 0, g: 0, b: 250)],
            blockSize: 20
        )
        let oriented = try JPEGCoder().encode(
            DecodedImage(bitmap: stored, format: .jpeg, orientation: .left),
            as: .jpeg,
            options: .init()
        )
        let jpeg = try file(oriented, "turned.jpg")
        let upright = try await run(["--output-dir", out, "--format", "png", jpeg])
        let uprightImage = try ImageCodersManager.shared.decode(try #require(upright.written))
        #expect(uprightImage.width == 20 && uprightImage.height == 40)
        #expect(upright.line["width"] as? Int == 20 && upright.line["format"] as? String == "png")
        #expect(uprightImage.bitmap[10, 30].r > 200, "orientation 8: the stored left half (red) ends at the bottom")
        let asStored = try await run(["--output-dir", out, "--format", "png", "--no-auto-orient", jpeg])
        #expect(try ImageCodersManager.shared.decode(try #require(asStored.written)).width == 40)

        // An animated GIF: refused as JPEG (one frame would be silently lost), kept as GIF, WebP,
        // PNG (APNG), AVIF and JPEG XL (those two decoded on demand, then written whole or
        // streamed), and with --quality auto.
        let animation = GeneratedImages.animation(
            width: 12,
            height: 8,
            colors: [RGBA(r: 255, g: 0, b: 0), RGBA(r: 0, g: 0, b: 255)],
            loopCount: 0,
            format: .gif
        )
        let gif = try file(try GIFCoder().encode(animation, as: .gif, options: .init()), "anim.gif")
        let refused = try await run(["--output-dir", out, "--format", "jpeg", gif])
        #expect(refused.status == 3 && refused.line["ok"] as? Bool == false)
        let message = try #require((refused.line["error"] as? [String: Any])?["message"] as? String)
        #expect(message.contains("cannot write an animation of 2 frames as jpeg"), "\(message)")
        for (format, quality) in [
            ("gif", []), ("webp", []), ("png", []), ("avif", []), ("jxl", []), ("webp", ["--quality", "auto"]),
        ] {
            let kept = try await run(["--output-dir", out, "--format", format] + quality + [gif])
            let keptImage = try ImageCodersManager.shared.decode(try #require(kept.written))
            #expect(keptImage.frames.count == 2 && keptImage.format.rawValue == format)
            #expect(kept.line["frames"] as? Int == 2)
        }

        // --quality reaches the encoder.
        let photo = try file(
            try PNGCoder().encode(
                DecodedImage(bitmap: GeneratedImages.noise(width: 64, height: 64), format: .png),
                as: .png,
                options: .init()
            ),
            "noise.png"
        )
        let low = try await run(["--output-dir", out, "--format", "jpeg", "--quality", "10", photo])
        let high = try await run(["--output-dir", out, "--format", "jpeg", "--quality", "95", photo])
        #expect(try #require(low.written).count * 2 < (try #require(high.written).count))
        let usage = try await CLIRunner.runDetached(["fetch", "--quality", "0", "--output-dir", out, photo])
        #expect(usage.status == 2 && usage.stderr.contains("--quality must be 1 to 100"))
    }

    @Test("Output as asked: --output FILE as curl's, --output-dir, explicit --quality and --color re-encode")
    func outputAsAsked() async throws {
        let folder = try TemporaryDirectory(prefix: "webimage-cli")
        defer { folder.remove() }
        func file(_ data: Data, _ name: String) throws -> String {
            try data.write(to: folder.file(name))
            return folder.file(name).absoluteString
        }
        var photo = DecodedImage(bitmap: GeneratedImages.noise(width: 64, height: 64), format: .jpeg)
        let plainBytes = try JPEGCoder().encode(photo, as: .jpeg, options: .init(quality: 0.95))
        let plain = try file(plainBytes, "photo.jpg")

        // --output FILE is that file (before: a folder named x.jpg), the bytes as downloaded.
        let single = folder.file("x.jpg")
        let toFile = try await CLIRunner.runDetached(["fetch", "--no-disk-cache", "--output", single.path, plain])
        #expect(toFile.status == 0, "\(toFile.stderr)")
        var isDirectory: ObjCBool = true
        #expect(
            FileManager.default.fileExists(atPath: single.path, isDirectory: &isDirectory) && !isDirectory.boolValue
        )
        #expect(try Data(contentsOf: single) == plainBytes)
        // Several inputs and one file: a usage error that names --output-dir; nothing written.
        let many = folder.file("many.jpg")
        let refused = try await CLIRunner.runDetached(["fetch", "--output", many.path, plain, plain])
        #expect(refused.status == 2 && refused.stderr.contains("--output-dir"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: many.path))
        // An existing folder given to --output is the design's --output DIR; --output-dir makes its folder.
        let existing = folder.file("existing")
        try FileManager.default.createDirectory(at: existing, withIntermediateDirectories: true)
        let intoFolder = try await CLIRunner.runDetached(["fetch", "--no-disk-cache", "--output", existing.path, plain])
        #expect(
            intoFolder.status == 0
                && (try? Data(contentsOf: existing.appendingPathComponent("photo.jpg"))) == plainBytes
        )
        let made = folder.file("made/deeper")
        let intoMade = try await CLIRunner.runDetached([
            "fetch", "--no-disk-cache", "--output-dir", made.path, plain, plain,
        ])
        #expect(
            intoMade.status == 0
                && FileManager.default.fileExists(atPath: made.appendingPathComponent("1-photo.jpg").path)
        )

        // --format jpeg --quality 40 on a JPEG: re-encoded at 40 (before: the original bytes).
        let lower = folder.file("q40.jpg")
        let requality = try await CLIRunner.runDetached([
            "fetch", "--no-disk-cache", "-o", lower.path, "--format", "jpeg", "--quality", "40", plain,
        ])
        #expect(requality.status == 0, "\(requality.stderr)")
        let lowerBytes = try Data(contentsOf: lower)
        #expect(ImageFormat(sniffing: lowerBytes) == .jpeg && lowerBytes.count * 2 < plainBytes.count)

        // A Display P3 JPEG: written as downloaded by default (the profile travels with the
        // bytes); --color srgb converts and writes it untagged; --color keep writes the profile.
        photo.colorProfile = .displayP3
        let p3Bytes = try JPEGCoder().encode(photo, as: .jpeg, options: .init(quality: 0.95))
        let p3 = try file(p3Bytes, "p3.jpg")
        let asIs = folder.file("as-is.jpg")
        _ = try await CLIRunner.runDetached(["fetch", "--no-disk-cache", "-o", asIs.path, p3])
        #expect(try Data(contentsOf: asIs) == p3Bytes)
        let stored = try JPEGCoder().decode(p3Bytes, options: ImageDecodingOptions(colorPolicy: .ignore))
        let srgb = folder.file("srgb.png")
        let converted = try await CLIRunner.runDetached([
            "fetch", "--no-disk-cache", "--color", "srgb", "-o", srgb.path, p3,
        ])
        #expect(converted.status == 0, "\(converted.stderr)")
        let convertedImage = try PNGCoder().decode(try Data(contentsOf: srgb), options: .init(colorPolicy: .keep))
        #expect(convertedImage.colorProfile == nil && convertedImage.bitmap.pixels != stored.bitmap.pixels)
        let keptFile = folder.file("kept.png")
        let kept = try await CLIRunner.runDetached([
            "fetch", "--no-disk-cache", "--color", "keep", "-o", keptFile.path, p3,
        ])
        #expect(kept.status == 0, "\(kept.stderr)")
        let keptImage = try PNGCoder().decode(try Data(contentsOf: keptFile), options: .init(colorPolicy: .keep))
        #expect(keptImage.colorProfile?.data == ColorProfile.displayP3.data)
        #expect(keptImage.bitmap.pixels == stored.bitmap.pixels)
        let badColor = try await CLIRunner.runDetached(["fetch", "--color", "cmyk", "-o", keptFile.path, p3])
        let usage = "--color 'cmyk' is not one of srgb, srgb-bpc, keep, ignore"
        #expect(badColor.status == 2 && badColor.stderr.contains(usage))
    }

    @Test(
        "--progress on a terminal: bytes and rate, erased before each result line and at the end; off a terminal, nothing"
    )
    func progressBar() async throws {
        let origin = try await OriginServer.start()
        let large = try PNGCoder().encode(
            DecodedImage(bitmap: GeneratedImages.noise(width: 256, height: 256), format: .png),
            as: .png,
            options: .init()
        )
        origin.setRoute(
            "/slow.png",
            .data(large, contentType: "image/png", behavior: .init(chunkSize: 16384, chunkInterval: .milliseconds(40)))
        )
        origin.setRoute("/fast.png", .data(Self.png, contentType: "image/png"))
        let slow = origin.url("/slow.png").absoluteString
        let fast = origin.url("/fast.png").absoluteString
        let erase = "\r\u{1B}[2K"

        let terminal = try await CLIRunner.runOnTerminal(["fetch", "--progress", "--no-disk-cache", fast, slow])
        #expect(terminal.status == 0, "\(terminal.stdout)")
        let screen = terminal.stdout
        #expect(screen.contains("] 1/2") && screen.contains("] 2/2"), "\(screen.debugDescription)")
        #expect(screen.contains("kB/s") || screen.contains("MB/s"), "the rate is shown: \(screen.debugDescription)")
        // Each result line starts on an erased line (never glued to the bar), in input order.
        #expect(screen.contains(erase + "\(fast): png 48×32"), "\(screen.debugDescription)")
        #expect(screen.contains(erase + "\(slow): png 256×256"), "\(screen.debugDescription)")
        // Nothing is left behind: the last thing written erases the bar.
        #expect(screen.hasSuffix(erase), "\(screen.suffix(80).debugDescription)")

        let piped = try await CLIRunner.runDetached(["fetch", "--progress", "--no-disk-cache", fast, slow])
        #expect(piped.status == 0)
        #expect(piped.stderr.isEmpty, "no bar when standard error is not a terminal: \(piped.stderr.debugDescription)")
        #expect(piped.stdout.split(separator: "\n").count == 2)
        await origin.stop()
    }

    @Test("Naming outputs as curl does: -o FILE, -o -, -O, --output-dir DIR, --output-template, --no-clobber")
    func outputNames() async throws {
        let folder = try TemporaryDirectory(prefix: "webimage-cli")
        defer { folder.remove() }
        let origin = try await OriginServer.start()
        origin.setRoute("/a/photo.png", .data(Self.png, contentType: "image/png"))
        origin.setRoute("/b/photo.png", .data(Self.png, contentType: "image/png"))
        origin.setRoute("/c/other.png", .data(Self.png, contentType: "image/png"))
        let a = origin.url("/a/photo.png").absoluteString
        let b = origin.url("/b/photo.png").absoluteString
        let c = origin.url("/c/other.png").absoluteString
        func names(_ directory: URL) throws -> [String] {
            try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
        }

        // -o FILE: exactly that file; its extension picks the format.
        let single = folder.file("picked.webp")
        let toFile = try await CLIRunner.runDetached(["fetch", "--json", "--no-disk-cache", "-o", single.path, a])
        #expect(toFile.status == 0, "\(toFile.stderr)")
        #expect(try toFile.jsonLines().first?["output"] as? String == single.path)
        #expect(ImageFormat(sniffing: try Data(contentsOf: single)) == .webp)
        // -o -: the bytes on standard output, the result line on standard error.
        let toStdout = try await CLIRunner.runDetached(["fetch", "--no-disk-cache", "-o", "-", a])
        #expect(toStdout.status == 0)
        #expect(toStdout.stdout.utf8.starts(with: [0xEF, 0xBF, 0xBD, 0x50, 0x4E, 0x47]), "PNG bytes, decoded as text")
        #expect(toStdout.stderr.contains("\(a): png 48×32"))
        // -o with two inputs is a usage error.
        let two = try await CLIRunner.runDetached(["fetch", "--no-disk-cache", "-o", single.path, a, b])
        #expect(two.status == 2 && two.stderr.contains("takes one input, got 2"))

        // --output DIR: remote names; only the two that share a name get their position.
        let out = folder.file("out")
        let named = try await CLIRunner.runDetached(["fetch", "--no-disk-cache", "--output-dir", out.path, a, b, c])
        #expect(named.status == 0, "\(named.stderr)")
        #expect(try names(out) == ["1-photo.png", "2-photo.png", "other.png"])
        // --no-clobber: existing files stay, those items fail; without it they are replaced.
        try Data("keep".utf8).write(to: out.appendingPathComponent("other.png"))
        let kept = try await CLIRunner.runDetached([
            "fetch", "--json", "--no-disk-cache", "--output-dir", out.path, "--no-clobber", c,
        ])
        #expect(kept.status == 3)
        let keptError = try #require(try kept.jsonLines().first?["error"] as? [String: Any])
        #expect((keptError["message"] as? String)?.contains("exists; --no-clobber leaves it alone") == true)
        #expect(try Data(contentsOf: out.appendingPathComponent("other.png")) == Data("keep".utf8))
        _ = try await CLIRunner.runDetached(["fetch", "--no-disk-cache", "--output-dir", out.path, c])
        #expect(try Data(contentsOf: out.appendingPathComponent("other.png")) == Self.png)

        // -O: remote names in the current folder.
        let here = folder.file("here")
        try FileManager.default.createDirectory(at: here, withIntermediateDirectories: true)
        let remote = try await CLIRunner.runDetached(["fetch", "--no-disk-cache", "-O", c], in: here)
        #expect(remote.status == 0, "\(remote.stderr)")
        #expect(try names(here) == ["other.png"])

        // --output-template inside --output DIR, converting.
        let templated = folder.file("templated")
        let template = try await CLIRunner.runDetached([
            "fetch", "--no-disk-cache", "--output-dir", templated.path, "--output-template", "%i_%s_100%%.%x",
            "--format", "jpeg", a, c,
        ])
        #expect(template.status == 0, "\(template.stderr)")
        #expect(try names(templated) == ["1_photo_100%.jpg", "2_other_100%.jpg"])
        // A template with folders (as vipsthumbnail -o and curl --create-dirs): relative to
        // --output or the current folder, or absolute; the folders are made.
        let nested = try await CLIRunner.runDetached(
            ["fetch", "--no-disk-cache", "--output-template", "deep/er/%s.%x", c],
            in: here
        )
        #expect(nested.status == 0, "\(nested.stderr)")
        #expect(try Data(contentsOf: here.appendingPathComponent("deep/er/other.png")) == Self.png)
        let absolute = folder.file("absolute").path
        let rooted = try await CLIRunner.runDetached(
            ["fetch", "--no-disk-cache", "--output-template", absolute + "/%i.%x", a, c]
        )
        #expect(rooted.status == 0, "\(rooted.stderr)")
        #expect(try names(folder.file("absolute")) == ["1.png", "2.png"])
        let folderOnly = try await CLIRunner.runDetached(["fetch", "--output-template", absolute + "/%s/", c])
        #expect(
            folderOnly.status == 3 && folderOnly.stderr.contains("names a folder, not a file"),
            "\(folderOnly.stderr)"
        )
        let clash = try await CLIRunner.runDetached(["fetch", "--output-template", "same.png", a, b])
        #expect(clash.status == 2 && clash.stderr.contains("would give every input the same name"))
        await origin.stop()
    }

    @Test("Proxies as curl takes them: http_proxy/HTTPS_PROXY, no_proxy, -x and --noproxy; a bad one is a usage error")
    func proxies() async throws {
        let proxy = try await ConnectProxyServer.start()
        let origin = try await OriginServer.start()
        origin.setRoute("/a.png", .data(Self.png, contentType: "image/png"))
        let url = origin.url("/a.png").absoluteString
        let base = ["fetch", "--no-disk-cache", "--json", url]
        let environment = ["http_proxy": proxy.url, "HTTPS_PROXY": proxy.url, "no_proxy": ""]
        let viaEnvironment = try await CLIRunner.runDetached(base, environment: environment)
        #expect(viaEnvironment.status == 0, "\(viaEnvironment.stderr)")
        #expect(proxy.tunnels.map(\.target) == ["127.0.0.1:\(origin.port)"])

        var bypassed = environment
        bypassed["no_proxy"] = "localhost,127.0.0.1"
        #expect(try await CLIRunner.runDetached(base, environment: bypassed).status == 0)
        #expect(
            try await CLIRunner.runDetached(base + ["--noproxy", "127.0.0.1"], environment: environment).status == 0
        )
        #expect(proxy.tunnels.count == 1, "bypassed hosts connect directly")

        let viaOption = try await CLIRunner.runDetached(base + ["-x", "127.0.0.1:\(proxy.port)"])
        #expect(viaOption.status == 0, "\(viaOption.stderr)")
        #expect(proxy.tunnels.count == 2)

        let bad = try await CLIRunner.runDetached(base, environment: ["HTTPS_PROXY": "socks5://127.0.0.1:1"])
        #expect(bad.status == 2)
        #expect(bad.stderr.contains("HTTPS_PROXY 'socks5://127.0.0.1:1': only http:// proxies"), "\(bad.stderr)")
        #expect(origin.requests.count == 4)
        await proxy.stop()
        await origin.stop()
    }

    @Test("Failures from Foundation read in words: the system's reason, never an NSError dump")
    func foundationErrorsInWords() async throws {
        let folder = try TemporaryDirectory(prefix: "webimage-cli")
        defer { folder.remove() }
        let image = folder.file("a.png")
        try Self.png.write(to: image)
        let blocker = folder.file("blocker")
        try Data("a file where the cache folder would go".utf8).write(to: blocker)
        let cache = try await CLIRunner.runDetached([
            "fetch", "--cache-dir", blocker.path + "/cache", image.absoluteString,
        ])
        #expect(cache.status == 0, "the load still succeeds: \(cache.stderr)")
        #expect(cache.stderr.contains("not stored in the disk cache"), "\(cache.stderr)")
        #expect(cache.stdout.hasPrefix("\(image.absoluteString): png 48×32, file ("), "a file is read, not downloaded")
        let pin = try await CLIRunner.runDetached([
            "fetch", "--pin-cert", folder.file("missing.der").path, "http://127.0.0.1:1/",
        ])
        #expect(pin.status == 2)
        #expect(pin.stderr.contains("missing.der: cannot read the file: No such file or directory"), "\(pin.stderr)")
        for output in [cache.stderr, pin.stderr] {
            #expect(
                !output.contains("NSCocoaErrorDomain") && !output.contains("UserInfo")
                    && !output.contains("Error Domain")
            )
        }
    }

    @Test("Text mode: results on standard output, each failure once on standard error, naming the input once")
    func textModeErrors() async throws {
        let origin = try await OriginServer.start()
        origin.setRoute("/ok.png", .data(Self.png, contentType: "image/png"))
        let ok = origin.url("/ok.png").absoluteString
        let missing = origin.url("/missing.png").absoluteString
        let result = try await CLIRunner.runDetached(["fetch", "--no-disk-cache", ok, missing])
        #expect(result.status == 8)
        #expect(result.stdout.hasPrefix("\(ok): png 48×32") && !result.stdout.contains("error"))
        let errors = result.stderr.split(separator: "\n").map(String.init)
        #expect(errors.count == 1, "\(result.stderr)")
        #expect(errors.first?.hasPrefix("\(missing): error: ") == true)
        #expect(errors.first?.contains("404") == true, "\(result.stderr)")
        #expect(errors.first.map { $0.components(separatedBy: missing).count - 1 } == 1, "the URL once")
        await origin.stop()
    }

    @Test("curl habits: -H, -A and --cacert reach the connection; -s prints only failures; bad values are usage errors")
    func curlHabits() async throws {
        let folder = try TemporaryDirectory(prefix: "webimage-cli")
        defer { folder.remove() }
        let (authority, server, origin) = try await Self.caIssuedOrigin()
        let url = origin.url("/a.png").absoluteString
        let missing = origin.url("/missing.png").absoluteString
        let authorityFile = folder.file("ca.pem")
        try authority.certificatePEM.write(to: authorityFile, atomically: true, encoding: .utf8)

        // Without the CA, the server is untrusted; with --cacert it loads, with -H and -A sent.
        let untrusted = try await CLIRunner.runDetached(["fetch", "--no-disk-cache", url])
        #expect(untrusted.status == 5 && untrusted.stdout.isEmpty)
        let trusted = try await CLIRunner.runDetached([
            "fetch", "--no-disk-cache", "--cacert", authorityFile.path, "-H", "X-Trace: 42", "-A", "curl-habit/1.0",
            "-s",
            url, missing,
        ])
        #expect(trusted.status == 8)
        #expect(trusted.stdout.isEmpty, "-s: no line for the image that loaded")
        #expect(trusted.stderr.contains("\(missing): error:"), "\(trusted.stderr)")
        let request = try #require(origin.requests.first { $0.path == "/a.png" })
        #expect(request.header("x-trace") == "42" && request.header("user-agent") == "curl-habit/1.0")

        // --cacert with a file that is not a certificate is refused at start, naming it.
        let key = folder.file("key.pem")
        try server.privateKeyPEM.write(to: key, atomically: true, encoding: .utf8)
        for arguments in [["--cacert", key.path], ["--connect-timeout", "soon"], ["-A", "two\nlines"]] {
            let usage = try await CLIRunner.runDetached(["fetch"] + arguments + [url])
            #expect(usage.status == 2, "\(arguments)")
            #expect(usage.stderr.contains(arguments[0]), "\(arguments): \(usage.stderr)")
        }
        await origin.stop()
    }

    @Test("--cert and --key (as curl): a server that asks for a client certificate loads with one, exits 5 without")
    func clientCertificate() async throws {
        let folder = try TemporaryDirectory(prefix: "webimage-cli")
        defer { folder.remove() }
        let authority = try TestCertificates.selfSigned(commonName: "swift-web-image test CA")
        let server = try TestCertificates.issued(by: authority)
        let clientAuthority = try TestCertificates.selfSigned(commonName: "swift-web-image client CA")
        let client = try TestCertificates.client(issuedBy: clientAuthority)
        let origin = try await OriginServer.start(
            tls: .init(
                certificatePEM: server.certificatePEM,
                privateKeyPEM: server.privateKeyPEM,
                clientCertificateAuthoritiesPEM: clientAuthority.certificatePEM
            )
        )
        origin.setRoute("/a.png", .data(Self.png, contentType: "image/png"))
        let url = origin.url("/a.png").absoluteString
        let files = [
            "ca.pem": authority.certificatePEM, "cert.pem": client.certificatePEM, "key.pem": client.privateKeyPEM,
        ]
        for (name, text) in files { try text.write(to: folder.file(name), atomically: true, encoding: .utf8) }
        let common = ["fetch", "--no-disk-cache", "--cacert", folder.file("ca.pem").path]

        let loaded = try await CLIRunner.runDetached(
            common + ["--cert", folder.file("cert.pem").path, "--key", folder.file("key.pem").path, url]
        )
        #expect(loaded.status == 0, "\(loaded.stderr)")
        #expect(loaded.stdout.contains("48x32") || loaded.stdout.contains("48×32"), "\(loaded.stdout)")
        let refused = try await CLIRunner.runDetached(common + [url])
        #expect(refused.status == 5, "\(refused.stderr)")
        #expect(refused.stderr.contains("asks for a client certificate"), "\(refused.stderr)")
        #expect(origin.requestCount(for: "/a.png") == 1)

        // A certificate without its key, or a key alone, is a usage error naming the file.
        let noKey = try await CLIRunner.runDetached(common + ["--cert", folder.file("cert.pem").path, url])
        #expect(noKey.status == 2 && noKey.stderr.contains("cert.pem") && noKey.stderr.contains("no private key"))
        let keyOnly = try await CLIRunner.runDetached(common + ["--key", folder.file("key.pem").path, url])
        #expect(keyOnly.status == 2 && keyOnly.stderr.contains("--key needs --cert"), "\(keyOnly.stderr)")
        await origin.stop()
    }

    @Test("--retry: transient failures (503) are tried again after the delay; a 404 is not")
    func retries() async throws {
        let origin = try await OriginServer.start()
        origin.setRoute("/busy.png", OriginRoute(status: 503))
        origin.setRoute("/gone.png", OriginRoute(status: 404))
        let busy = origin.url("/busy.png").absoluteString
        let gone = origin.url("/gone.png").absoluteString
        async let run = CLIRunner.runDetached([
            "fetch", "--json", "--no-disk-cache", "--retry", "3", "--retry-delay", "0.5", busy, gone,
        ])
        // After two refusals the server recovers; the third attempt loads.
        let deadline = ContinuousClock.now + .seconds(20)
        while origin.requestCount(for: "/busy.png") < 2, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        origin.setRoute("/busy.png", .data(Self.png, contentType: "image/png"))
        let result = try await run
        let lines = try result.jsonLines()
        #expect(lines.map { $0["ok"] as? Bool } == [true, false], "\(result.stdout) \(result.stderr)")
        #expect(origin.requestCount(for: "/busy.png") == 3)
        #expect(origin.requestCount(for: "/gone.png") == 1, "a 404 is not retried")
        #expect(result.stderr.contains("\(busy): warning: ") && result.stderr.contains("retry 2 of 3"))
        await origin.stop()
    }

    @Test("Image operations: --crop with --gravity, --resize with --fit, --rotate, --blur, --strip, upright first")
    func imageOperations() async throws {
        let folder = try TemporaryDirectory(prefix: "webimage-cli")
        defer { folder.remove() }
        // 60×40 in 20×20 blocks; block (column, row) has colour (column + row) % 6.
        let colors: [RGBA] = [
            .init(r: 250, g: 0, b: 0), .init(r: 0, g: 250, b: 0), .init(r: 0, g: 0, b: 250),
            .init(r: 250, g: 250, b: 0), .init(r: 0, g: 250, b: 250), .init(r: 250, g: 0, b: 250),
        ]
        let blocks = GeneratedImages.blocks(width: 60, height: 40, colors: colors, blockSize: 20)
        let source = folder.file("blocks.png")
        try PNGCoder().encode(DecodedImage(bitmap: blocks, format: .png), as: .png, options: .init()).write(to: source)
        func run(_ arguments: [String], input: URL = source) async throws -> DecodedImage {
            let out = folder.file("out-\(UUID().uuidString).png")
            let result = try await CLIRunner.runDetached(
                ["fetch", "--no-disk-cache", "-o", out.path] + arguments + [input.absoluteString]
            )
            #expect(result.status == 0, "\(arguments): \(result.stderr)")
            return try ImageCodersManager.shared.decode(try Data(contentsOf: out))
        }
        let corner = try await run(["--crop", "20x20", "--gravity", "north-east"])
        #expect(corner.width == 20 && corner.height == 20 && corner.bitmap[10, 10] == colors[2])
        let shifted = try await run(["--crop", "20x20+20+0"])  // centre (20,10), moved right by 20
        #expect(shifted.bitmap[10, 5] == colors[2] && shifted.bitmap[10, 15] == colors[3])
        let fitted = try await run(["--resize", "30x30"])
        #expect(fitted.width == 30 && fitted.height == 20)
        let filled = try await run(["--resize", "30x30", "--fit", "fill", "--gravity", "west"])
        #expect(filled.width == 30 && filled.height == 30 && filled.bitmap[3, 3] == colors[0])
        let forced = try await run(["--resize", "30x30", "--fit", "force"])
        #expect(forced.width == 30 && forced.height == 30)
        // An animation is transformed too, every frame (SDWebImage leaves animations alone unless
        // asked: a command line asked).
        let animation = folder.file("moving.gif")
        try GIFBuilder.checkerAnimation(width: 60, height: 40, frames: 5).write(to: animation)
        let resizedAnimation = try await run(["--resize", "30x30"], input: animation)
        #expect(resizedAnimation.width == 30 && resizedAnimation.height == 20)
        #expect(resizedAnimation.frames.count == 5)
        let turned = try await run(["--rotate", "90"])
        // clockwise: the bottom-left block (0, 1) comes to the top left
        #expect(turned.width == 40 && turned.height == 60 && turned.bitmap[5, 5] == colors[1])
        let blurred = try await run(["--blur", "4"])
        #expect(blurred.width == 60 && blurred.bitmap[20, 10] != colors[0] && blurred.bitmap[20, 10] != colors[1])

        // An orientation-6 JPEG stored 40×20 (left half red) shows 20×40 with red on top:
        // the crop works on the image as shown.
        let stored = GeneratedImages.blocks(width: 40, height: 20, colors: [colors[0], colors[2]], blockSize: 20)
        let jpeg = folder.file("turned.jpg")
        try JPEGCoder().encode(
            DecodedImage(bitmap: stored, format: .jpeg, orientation: .right),
            as: .jpeg,
            options: .init()
        )
        .write(to: jpeg)
        let top = try await run(["--crop", "20x20", "--gravity", "north"], input: jpeg)
        #expect(top.width == 20 && top.height == 20 && top.bitmap[10, 10].r > 200 && top.bitmap[10, 10].b < 60)
        // --strip with --no-auto-orient: the stored pixels, and no orientation left to apply.
        let out = folder.file("stripped.jpg")
        let stripped = try await CLIRunner.runDetached([
            "fetch", "--no-disk-cache", "-o", out.path, "--strip", "--no-auto-orient", jpeg.absoluteString,
        ])
        #expect(stripped.status == 0, "\(stripped.stderr)")
        let strippedImage = try ImageCodersManager.shared.decode(try Data(contentsOf: out))
        #expect(strippedImage.orientation == .up && strippedImage.width == 40)

        for arguments in [
            ["--fit", "cover"], ["--gravity", "up"], ["--rotate", "45"], ["--crop", "10"], ["--blur", "0"],
        ] {
            let usage = try await CLIRunner.runDetached(["fetch", "-o", out.path] + arguments + [jpeg.absoluteString])
            #expect(usage.status == 2 && usage.stderr.contains(arguments[0]), "\(arguments): \(usage.stderr)")
        }
    }

    @Test("Standard input: fetch --input - reads URLs, info - reads an image")
    func standardInput() async throws {
        let origin = try await OriginServer.start()
        origin.setRoute("/a.png", .data(Self.png, contentType: "image/png"))
        origin.setRoute("/b.png", .data(Self.png, contentType: "image/png"))
        // A comment, CRLF and CR line ends, a blank line and blanks around a URL.
        let list = "# images\r\n \(origin.url("/a.png").absoluteString)\t\r\n\r\(origin.url("/b.png").absoluteString)\n"
        let fetched = try await CLIRunner.runDetached(
            ["fetch", "--json", "--no-disk-cache", "--input", "-"],
            input: Data(list.utf8)
        )
        #expect(fetched.status == 0, "\(fetched.stderr)")
        #expect(try fetched.jsonLines().map { $0["ok"] as? Bool } == [true, true])
        let info = try await CLIRunner.runDetached(["info", "--json", "-"], input: Self.png)
        let line = try #require(try info.jsonLines().first)
        #expect(info.status == 0 && line["input"] as? String == "-" && line["width"] as? Int == 48)
        #expect(line["bytes"] as? Int == Self.png.count)
        let tooLarge = try await CLIRunner.runDetached(
            ["info", "--json", "--max-file-size", "100", "-"],
            input: Self.png
        )
        #expect(tooLarge.status == 1)
        #expect((try tooLarge.jsonLines().first?["error"] as? [String: Any])?["code"] as? String == "fileTooLarge")
        await origin.stop()
    }

    @Test("Exit statuses tell failure kinds apart when every failure shares one; mixed failures exit 1")
    func exitStatuses() async throws {
        let origin = try await OriginServer.start()
        origin.setRoute("/missing.png", OriginRoute(status: 404))
        origin.setRoute("/text.png", .data(Data("not an image".utf8), contentType: "image/png"))
        let missing = origin.url("/missing.png").absoluteString
        let text = origin.url("/text.png").absoluteString
        let cases: [([String], Int32)] = [
            ([missing], 8), ([text], 9), (["http://127.0.0.1:9/refused.png"], 4), ([missing, text], 1),
            (["not a url"], 1),
        ]
        for (urls, status) in cases {
            let result = try await CLIRunner.runDetached(["fetch", "--no-disk-cache"] + urls)
            #expect(result.status == status, "\(urls): \(result.stderr)")
        }
        let help = try await CLIRunner.runDetached(["fetch", "--help"])
        #expect(help.stdout.contains("4 network") && help.stdout.contains("8 HTTP status"))
        await origin.stop()
    }

    @Test("--memory-cache bounds the run's memory cache: 0 keeps nothing, so a repeated URL loads again")
    func memoryCacheSize() async throws {
        let folder = try TemporaryDirectory(prefix: "webimage-cli")
        defer { folder.remove() }
        let file = folder.file("a.png")
        try Self.png.write(to: file)
        let url = file.absoluteString
        let base = ["fetch", "--json", "--no-disk-cache", "--concurrency", "1"]
        let kept = try await CLIRunner.runDetached(base + [url, url])
        #expect(try kept.jsonLines().map { $0["cacheType"] as? String } == ["none", "memory"])
        let none = try await CLIRunner.runDetached(base + ["--memory-cache", "0", url, url])
        #expect(try none.jsonLines().map { $0["cacheType"] as? String } == ["none", "none"])
        let tiny = try await CLIRunner.runDetached(base + ["--memory-cache", "1K", url, url])
        #expect(try tiny.jsonLines().last?["cacheType"] as? String == "none", "a 6 KB image is over a 1 KB budget")
    }

    @Test("--max-download-size: a larger response is an item failure (downloadTooLarge); 0 lifts the limit")
    func maxDownloadSize() async throws {
        let folder = try TemporaryDirectory(prefix: "webimage-cli")
        defer { folder.remove() }
        let origin = try await OriginServer.start()
        let noise = try PNGCoder().encode(
            DecodedImage(bitmap: GeneratedImages.noise(width: 64, height: 64), format: .png),
            as: .png,
            options: .init()
        )
        origin.setRoute("/a.png", .data(noise, contentType: "image/png"))
        let url = origin.url("/a.png").absoluteString
        let limited = try await CLIRunner.runDetached([
            "fetch", "--json", "--no-disk-cache", "--max-download-size", "1K", url,
        ])
        #expect(noise.count > 1024)
        #expect(limited.status == 1)
        let failure = try #require(try limited.jsonLines().first?["error"] as? [String: Any])
        #expect(failure["code"] as? String == "downloadTooLarge")
        #expect((failure["message"] as? String)?.contains("1024-byte limit") == true)

        let lifted = try await CLIRunner.runDetached([
            "fetch", "--json", "--no-disk-cache", "--max-download-size", "0", url,
        ])
        #expect(lifted.status == 0, "\(lifted.stderr)")
        #expect(try lifted.jsonLines().first?["bytes"] as? Int == noise.count)
        await origin.stop()
    }

    @Test("--max-time ends a download that drips a byte at a time, which --timeout alone lets go on")
    func maxTime() async throws {
        // 5,000 bytes declared, one sent every 100 ms: never idle for --timeout's 5 s.
        let origin = try await OriginServer.start()
        origin.setRoute(
            "/drip.png",
            OriginRoute(
                headers: [("Content-Type", "image/png")],
                body: Data(repeating: 0x50, count: 5000),
                behavior: .init(chunkSize: 1, chunkInterval: .milliseconds(100))
            )
        )
        let clock = ContinuousClock()
        let started = clock.now
        let result = try await CLIRunner.runDetached([
            "fetch", "--json", "--no-disk-cache", "--timeout", "5", "--max-time", "2",
            origin.url("/drip.png").absoluteString,
        ])
        let elapsed = clock.now - started
        #expect(result.status == 4, "\(result.stdout) \(result.stderr)")
        let failure = try #require(try result.jsonLines().first?["error"] as? [String: Any])
        #expect(failure["code"] as? String == "networkError", "\(failure)")
        #expect((failure["message"] as? String)?.contains("no complete response within 2.0 seconds") == true)
        #expect(elapsed < .seconds(400), "the drip alone would take 500 s")
        await origin.stop()
    }

    @Test("--output that cannot be written: outputFailed with the cause in words, nothing left behind")
    func outputFailure() async throws {
        let folder = try TemporaryDirectory(prefix: "webimage-cli")
        defer { folder.remove() }
        let origin = try await OriginServer.start()
        origin.setRoute("/b.png", .data(Self.png, contentType: "image/png"))
        let out = folder.file("out")
        // A folder where the output file goes: the rename into place fails (root ignores modes).
        try FileManager.default.createDirectory(
            at: out.appendingPathComponent("b.png"),
            withIntermediateDirectories: true
        )
        let url = origin.url("/b.png").absoluteString
        let result = try await CLIRunner.runDetached([
            "fetch", "--json", "--no-disk-cache", "--output-dir", out.path, url,
        ])
        #expect(result.status == 3)
        let line = try #require(result.jsonLines().first)
        #expect(line["ok"] as? Bool == false)
        let error = try #require(line["error"] as? [String: Any])
        #expect(error["code"] as? String == "outputFailed")
        let message = try #require(error["message"] as? String)
        #expect(message.hasPrefix(url) && message.contains("Is a directory"))
        #expect(!message.contains("NSCocoaErrorDomain") && !message.contains("could not be completed"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: out.path) == ["b.png"])
        await origin.stop()
    }

    @Test("A disk-cache write that fails is a warning naming the URL and the cause; the image still loads")
    func lostDiskWriteWarns() async throws {
        let folder = try TemporaryDirectory(prefix: "webimage-cli")
        defer { folder.remove() }
        let origin = try await OriginServer.start()
        origin.setRoute("/kept.png", .data(Self.png, contentType: "image/png"))
        origin.setRoute("/lost.png", .data(Self.png, contentType: "image/png"))
        let cache = folder.file("cache")
        let kept = origin.url("/kept.png").absoluteString
        let lost = origin.url("/lost.png").absoluteString
        // A folder where the entry goes: its rename into place fails (root ignores modes).
        try FileManager.default.createDirectory(
            at: cache.appendingPathComponent(DiskCache.fileName(forKey: lost)).appendingPathComponent("x"),
            withIntermediateDirectories: true
        )
        for json in [false, true] {
            let result = try await CLIRunner.runDetached(
                ["fetch", "--cache-dir", cache.path, lost, kept] + (json ? ["--json"] : [])
            )
            #expect(result.status == 0, "\(result.stderr)")
            if json {
                #expect(try result.jsonLines().map { $0["ok"] as? Bool } == [true, true])
            } else {
                #expect(result.stdout.split(separator: "\n").count == 2)
            }
            let warnings = result.stderr.split(separator: "\n")
            #expect(warnings.count == 1, "\(result.stderr)")
            let warning = String(try #require(warnings.first))
            #expect(warning.hasPrefix("\(lost): warning: not stored in the disk cache"))
            #expect(warning.contains("Is a directory"))
        }
        let entries = try FileManager.default.contentsOfDirectory(atPath: cache.path)
        #expect(entries.contains(DiskCache.fileName(forKey: kept)))
        await origin.stop()
    }

    @Test("--pin-cert with a CA-issued server certificate: that server loads, another of the CA's is refused")
    func pinnedServerCertificate() async throws {
        let folder = try TemporaryDirectory(prefix: "webimage-cli")
        defer { folder.remove() }
        let (authority, server, origin) = try await Self.caIssuedOrigin()
        let url = origin.url("/a.png").absoluteString
        let pinned = folder.file("server.pem")
        // The file a user saves from the server holds its chain: the server's certificate comes first.
        try server.certificatePEM.write(to: pinned, atomically: true, encoding: .utf8)
        let loaded = try await CLIRunner.runDetached([
            "fetch", "--json", "--no-disk-cache", "--pin-cert", pinned.path, url,
        ])
        #expect(loaded.status == 0, "\(loaded.stdout) \(loaded.stderr)")

        let other = folder.file("other.der")
        try TestCertificates.issued(by: authority).certificateDER.write(to: other)
        let refused = try await CLIRunner.runDetached([
            "fetch", "--json", "--no-disk-cache", "--pin-cert", other.path, url,
        ])
        #expect(refused.status == 5)
        let error = try #require(refused.jsonLines().first?["error"] as? [String: Any])
        #expect((error["message"] as? String)?.contains("does not match any pinned certificate") == true, "\(error)")
        await origin.stop()
    }

    @Test("Usage errors exit 2 and name the bad input")
    func usage() async throws {
        for arguments in [
            ["fetch", "--options", "bogus", "http://x/a.png"], ["fetch", "--thumbnail", "0x5", "http://x/a.png"],
            ["fetch", "--header", "no colon", "http://x/a.png"], ["fetch"],
            ["fetch", "--format", "tiff", "--output", "o", "x"], ["fetch", "--quality", "50", "http://x/a.png"],
            ["prefetch"], ["cache", "trim", "--expire-type", "someday"], ["cache", "trim", "--max-age", "7x"],
            ["cache", "trim", "--expire-type", "access_date"], ["fetch", "--timeout", "0", "http://x/a.png"],
            ["fetch", "--retry-delay", "soon", "http://x/a.png"], ["info", "--max-file-size", "12Q", "x"],
            ["fetch", "--input", NSTemporaryDirectory()], ["prefetch", "--input", "/no/such/list.txt"],
            ["fetch", "--max-download-size", "12X", "http://x/a.png"],
            ["fetch", "--max-download-size", "-1", "http://x/a.png"],
            ["fetch", "--max-time", "0", "http://x/a.png"],
            ["fetch", "--max-time", "99999999999999999999", "http://x/a.png"],
            ["fetch", "--timeout", "99999999999999999999", "http://x/a.png"],
        ] {
            let result = try await CLIRunner.runDetached(arguments)
            #expect(result.status == 2, "\(arguments)")
            #expect(result.stdout.isEmpty)
            #expect(!result.stderr.isEmpty)
            #expect(!result.stderr.contains("Domain="), "in words, not a Foundation error dump: \(result.stderr)")
        }
    }

    @Test("prefetch summarises; cache stats, ls, trim and clear look after the folder")
    func prefetchAndCache() async throws {
        let folder = try TemporaryDirectory(prefix: "webimage-cli")
        defer { folder.remove() }
        let origin = try await OriginServer.start()
        for index in 0..<4 {
            origin.setRoute("/p\(index).png", .data(Self.png, contentType: "image/png", cacheControl: "max-age=86400"))
        }
        let cache = folder.file("cache").path
        let urls = (0..<4).map { origin.url("/p\($0).png").absoluteString }

        let cold = try await CLIRunner.runDetached(
            ["prefetch", "--json", "--cache-dir", cache] + urls + [origin.url("/gone.png").absoluteString]
        )
        #expect(cold.status == 8)
        let summary = try #require(cold.jsonLines().last)
        #expect(summary["finished"] as? Int == 4)
        #expect(summary["skipped"] as? Int == 0)
        #expect(summary["failed"] as? Int == 1)

        let warm = try await CLIRunner.runDetached(["prefetch", "--json", "--cache-dir", cache] + urls)
        #expect(warm.status == 0)
        let warmSummary = try #require(try warm.jsonLines().last)
        #expect(warmSummary["skipped"] as? Int == 4 && warmSummary["finished"] as? Int == 0, "disjoint counts")
        #expect(origin.requestCount(for: "/p0.png") == 1)

        let stats = try await CLIRunner.runDetached(["cache", "stats", "--json", "--cache-dir", cache])
        #expect(try stats.jsonLines().first?["count"] as? Int == 4)
        let listing = try await CLIRunner.runDetached(["cache", "ls", "--json", "--cache-dir", cache])
        #expect(Set(try listing.jsonLines().compactMap { $0["key"] as? String }) == Set(urls))
        // Sizes and durations in one style, kebab-case values.
        let kept = try await CLIRunner.runDetached([
            "cache", "trim", "--json", "--max-age", "7d", "--max-size", "1G", "--expire-type", "access-date",
            "--cache-dir", cache,
        ])
        let keptCount = try kept.jsonLines().first?["count"] as? Int
        #expect(kept.status == 0 && keptCount == 4, "\(kept.stderr)")
        let trim = try await CLIRunner.runDetached(["cache", "trim", "--json", "--max-size", "0", "--cache-dir", cache])
        #expect(try trim.jsonLines().first?["count"] as? Int == 0)
        let clear = try await CLIRunner.runDetached(["cache", "clear", "--json", "--cache-dir", cache])
        #expect(clear.status == 0)
        await origin.stop()
    }
}
