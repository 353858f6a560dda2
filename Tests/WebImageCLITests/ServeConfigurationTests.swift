import Foundation
import Testing
import WebImageCoders
import WebImageHTTP
import WebImageOrigin
import WebImageServer
import WebImageTestSupport

/// `webimage serve`'s settings from the environment (`WEBIMAGE_*`, imgproxy's `IMGPROXY_*`) and a
/// JSON config file, seen through `--print-config`.
@Suite("webimage serve: configuration", .timeLimit(.minutes(1)))
struct ServeConfigurationTests {
    /// `--print-config`'s lines by setting name: (value, origin).
    static func printed(
        _ arguments: [String] = [],
        environment: [String: String] = [:]
    ) async throws -> [String: (value: String, origin: String)] {
        let run = try await CLIRunner.runDetached(["serve", "--print-config"] + arguments, environment: environment)
        try #require(run.status == 0, "\(run.stderr)")
        var lines: [String: (String, String)] = [:]
        for line in run.stdout.split(separator: "\n") {
            let parts = line.split(separator: " ", omittingEmptySubsequences: true)
            guard let name = parts.first, let open = line.firstIndex(of: "("), line.hasSuffix(")") else { continue }
            let origin = String(line[line.index(after: open)..<line.index(before: line.endIndex)])
            let value = line[line.index(line.startIndex, offsetBy: name.count)..<open].trimmingCharacters(
                in: .whitespaces
            )
            lines[String(name)] = (value, origin)
        }
        return lines
    }

    @Test("The flag wins over WEBIMAGE_*, which wins over IMGPROXY_*, which wins over the file; secrets masked")
    func precedence() async throws {
        let folder = try TemporaryDirectory(prefix: "webimage-config")
        defer { folder.remove() }
        let file = folder.url.appendingPathComponent("serve.json")
        try Data(
            #"{"ttl": "1h", "max-src-resolution": 12, "workers": 3, "preset": ["thumb=w:100"], "allow-loopback": true}"#
                .utf8
        )
        .write(to: file)
        let lines = try await Self.printed(
            ["--config", file.path, "--workers", "5"],
            environment: [
                "WEBIMAGE_TTL": "7d", "IMGPROXY_TTL": "60", "IMGPROXY_KEY": "abcdef", "IMGPROXY_SALT": "001122",
                "IMGPROXY_MAX_SRC_RESOLUTION": "20",
            ]
        )
        #expect(lines["workers"]?.value == "5" && lines["workers"]?.origin == "flag")
        #expect(lines["ttl"]?.value == "7d" && lines["ttl"]?.origin == "environment WEBIMAGE_TTL")
        #expect(lines["max-src-resolution"]?.origin == "environment IMGPROXY_MAX_SRC_RESOLUTION")
        #expect(lines["preset"]?.value == "thumb=w:100" && lines["preset"]?.origin == "file \(file.path)")
        #expect(lines["allow-loopback"]?.origin == "file \(file.path)")
        #expect(lines["key"]?.value == "***" && lines["salt"]?.value == "***")
        #expect(lines["bind"]?.value == "127.0.0.1:8080" && lines["bind"]?.origin == "default")
        let output = try await CLIRunner.runDetached(
            ["serve", "--print-config"],
            environment: ["IMGPROXY_KEY": "abcdef", "IMGPROXY_SALT": "001122"]
        )
        #expect(!output.stdout.contains("abcdef") && !output.stdout.contains("001122"), "secrets never printed")
    }

    @Test("Every IMGPROXY_* variable taken is read, with imgproxy's meaning")
    func imgproxyVariables() async throws {
        let variables: [(variable: String, value: String, setting: String)] = [
            ("IMGPROXY_BIND", ":9090", "bind"), ("IMGPROXY_SIGNATURE_SIZE", "8", "signature-size"),
            ("IMGPROXY_ALLOW_LOOPBACK_SOURCE_ADDRESSES", "true", "allow-loopback"),
            ("IMGPROXY_ALLOW_PRIVATE_SOURCE_ADDRESSES", "true", "allow-private-networks"),
            ("IMGPROXY_PRESETS", "a=w:10,b=h:20", "preset"), ("IMGPROXY_ONLY_PRESETS", "true", "only-presets"),
            ("IMGPROXY_STRIP_METADATA", "false", "strip-metadata"),
            ("IMGPROXY_KEEP_COPYRIGHT", "false", "keep-copyright"),
            ("IMGPROXY_STRIP_COLOR_PROFILE", "false", "strip-color-profile"), ("IMGPROXY_TTL", "3600", "ttl"),
            ("IMGPROXY_MAX_SRC_FILE_SIZE", "0", "max-src-file-size"),
            ("IMGPROXY_MAX_SRC_RESOLUTION", "16.5", "max-src-resolution"),
            ("IMGPROXY_MAX_RESULT_DIMENSION", "4000", "max-result-dimension"),
            ("IMGPROXY_MAX_ANIMATION_FRAMES", "10", "max-animation-frames"),
            ("IMGPROXY_MAX_ANIMATION_FRAME_RESOLUTION", "2.5", "max-animation-frame-resolution"),
            ("IMGPROXY_DOWNLOAD_TIMEOUT", "3", "download-timeout"),
            ("IMGPROXY_READ_REQUEST_TIMEOUT", "4", "read-request-timeout"),
            ("IMGPROXY_KEEP_ALIVE_TIMEOUT", "6", "keep-alive-timeout"),
            ("IMGPROXY_MAX_CLIENTS", "100", "max-connections"),
            ("IMGPROXY_WORKERS", "3", "workers"), ("IMGPROXY_REQUESTS_QUEUE_SIZE", "7", "queue"),
            ("IMGPROXY_PROMETHEUS_BIND", "127.0.0.1:9091", "metrics-bind"),
            ("IMGPROXY_WATERMARK_OPACITY", "0.5", "watermark-opacity"),
            ("IMGPROXY_ALLOWED_SOURCES", "https://*.example.com/,https://cdn.example.net/", "allowed-sources"),
            ("IMGPROXY_MAX_REDIRECTS", "2", "max-redirects"), ("IMGPROXY_USER_AGENT", "proxy/1", "user-agent"),
            ("IMGPROXY_ALLOW_ORIGIN", "*", "allow-origin"), ("IMGPROXY_PATH_PREFIX", "/img", "path-prefix"),
            ("IMGPROXY_QUALITY", "70", "quality"), ("IMGPROXY_FORMAT_QUALITY", "jpeg=70,avif=40", "format-quality"),
            ("IMGPROXY_FALLBACK_IMAGE_HTTP_CODE", "404", "fallback-image-http-code"),
            ("IMGPROXY_FALLBACK_IMAGE_TTL", "60", "fallback-image-ttl"),
            ("IMGPROXY_GRACEFUL_STOP_TIMEOUT", "20", "grace"),
            ("IMGPROXY_FREE_MEMORY_INTERVAL", "30", "free-memory-interval"),
            ("IMGPROXY_JPEG_PROGRESSIVE", "true", "jpeg-progressive"),
            ("IMGPROXY_PNG_INTERLACED", "true", "png-interlaced"), ("IMGPROXY_AUTO_ROTATE", "false", "auto-rotate"),
            ("IMGPROXY_ENFORCE_THUMBNAIL", "true", "enforce-thumbnail"), ("IMGPROXY_USE_S3", "false", "s3"),
            ("IMGPROXY_USE_LAST_MODIFIED", "true", "last-modified"), ("IMGPROXY_AUTO_JXL", "true", "auto-jxl"),
            ("IMGPROXY_AUTO_WEBP", "true", "auto-webp"), ("IMGPROXY_AUTO_AVIF", "true", "auto-avif"),
            ("IMGPROXY_ENFORCE_WEBP", "true", "enforce-webp"), ("IMGPROXY_ENFORCE_AVIF", "true", "enforce-avif"),
            ("IMGPROXY_ENFORCE_JXL", "true", "enforce-jxl"),
            ("IMGPROXY_AVIF_SPEED", "4", "avif-speed"), ("IMGPROXY_JXL_EFFORT", "7", "jxl-effort"),
            ("IMGPROXY_SET_CANONICAL_HEADER", "true", "set-canonical-header"),
            ("IMGPROXY_AUTOQUALITY_METHOD", "dssim", "autoquality-method"),
            ("IMGPROXY_AUTOQUALITY_TARGET", "0.015", "autoquality-target"),
            ("IMGPROXY_AUTOQUALITY_MIN", "60", "autoquality-min"),
            ("IMGPROXY_AUTOQUALITY_MAX", "85", "autoquality-max"),
            ("IMGPROXY_AUTOQUALITY_FORMAT_MIN", "avif=40", "autoquality-format-min"),
            ("IMGPROXY_AUTOQUALITY_FORMAT_MAX", "avif=55,jxl=80", "autoquality-format-max"),
            ("IMGPROXY_AUTOQUALITY_ALLOWED_ERROR", "0.002", "autoquality-allowed-error"),
        ]
        var environment = ["IMGPROXY_KEY": "abcdef", "IMGPROXY_SALT": "001122"]
        for entry in variables { environment[entry.variable] = entry.value }
        let lines = try await Self.printed(environment: environment)
        for entry in variables {
            #expect(lines[entry.setting]?.origin == "environment \(entry.variable)", "\(entry.variable)")
            #expect(lines[entry.setting]?.value == entry.value, "\(entry.variable)")
        }
        // The older IMGPROXY_CONCURRENCY names the workers too.
        let older = try await Self.printed(["--insecure"], environment: ["IMGPROXY_CONCURRENCY": "2"])
        #expect(older["workers"]?.origin == "environment IMGPROXY_CONCURRENCY")
        // Per-format defaults are shown as they apply, not as "none".
        #expect(older["autoquality-format-min"]?.value == "avif=60")
        #expect(older["autoquality-format-max"]?.value == "avif=65")
        #expect(older["format-quality"]?.value == "avif=63,jxl=77,webp=79")
    }

    @Test("A bad value names where it came from; a bad file names the file")
    func badValues() async throws {
        let ttl = try await CLIRunner.runDetached(["serve", "--insecure"], environment: ["IMGPROXY_TTL": "soon"])
        #expect(ttl.status == 2 && ttl.stderr.contains("environment IMGPROXY_TTL for --ttl"), "\(ttl.stderr)")
        let workers = try await CLIRunner.runDetached(["serve", "--insecure"], environment: ["WEBIMAGE_WORKERS": "0"])
        #expect(workers.status == 2 && workers.stderr.contains("--workers must be at least 1"), "\(workers.stderr)")
        let effort = try await CLIRunner.runDetached(
            ["serve", "--insecure"],
            environment: ["IMGPROXY_JXL_EFFORT": "0"]
        )
        #expect(
            effort.status == 2 && effort.stderr.contains("IMGPROXY_JXL_EFFORT for --jxl-effort: must be 1 to 9, got 0"),
            "\(effort.stderr)"
        )
        let speed = try await CLIRunner.runDetached(["serve", "--insecure", "--avif-speed", "11"])
        #expect(speed.status == 2 && speed.stderr.contains("--avif-speed must be 0 to 10, got 11"), "\(speed.stderr)")
        let av1 = try await CLIRunner.runDetached(["serve", "--insecure", "--avif-encoder", "x265"])
        #expect(av1.status == 2 && av1.stderr.contains("'x265' is not one of auto, aom, svt, rav1e"), "\(av1.stderr)")
        let method = try await CLIRunner.runDetached(
            ["serve", "--insecure"],
            environment: ["IMGPROXY_AUTOQUALITY_METHOD": "guess"]
        )
        #expect(
            method.status == 2 && method.stderr.contains("'guess' is not one of none, size, dssim"),
            "\(method.stderr)"
        )
        let bounds = try await CLIRunner.runDetached(["serve", "--insecure", "--autoquality-min", "90"])
        #expect(
            bounds.status == 2 && bounds.stderr.contains("--autoquality-min (90) is above --autoquality-max (80)"),
            "\(bounds.stderr)"
        )
        // Flags are held to the same bounds as the environment.
        for (arguments, cause) in [
            (["--autoquality-target=-1"], "--autoquality-target must be above 0, got -1.0"),
            (["--autoquality-allowed-error=-0.5"], "--autoquality-allowed-error must be 0 or more, got -0.5"),
            (["--best-format-complexity-threshold=-2"], "--best-format-complexity-threshold must be 0 or more"),
        ] {
            let refused = try await CLIRunner.runDetached(["serve", "--insecure"] + arguments)
            #expect(refused.status == 2 && refused.stderr.contains(cause), "\(arguments): \(refused.stderr)")
        }
        let flag = try await CLIRunner.runDetached(["serve", "--insecure", "--ttl", "soon"])
        #expect(flag.status == 2 && flag.stderr.contains("--ttl: 'soon' is not a duration"), "\(flag.stderr)")
        // Durations past 10⁹ s would overflow the integer clocks they end in: refused, not a trap.
        for flag in ["--grace", "--ttl", "--keep-alive-timeout", "--free-memory-interval", "--download-timeout"] {
            let long = try await CLIRunner.runDetached(["serve", "--insecure", flag, "99999999999999999999"])
            let cause = "\(flag): '99999999999999999999' is too long a duration"
            #expect(long.status == 2 && long.stderr.contains(cause), "\(long.stderr)")
        }
        let longTTL = try await CLIRunner.runDetached(
            ["serve", "--insecure"],
            environment: ["IMGPROXY_TTL": "400000w"]
        )
        #expect(
            longTTL.status == 2 && longTTL.stderr.contains("environment IMGPROXY_TTL for --ttl: '400000w' is too long"),
            "\(longTTL.stderr)"
        )
        let folder = try TemporaryDirectory(prefix: "webimage-config")
        defer { folder.remove() }
        let file = folder.url.appendingPathComponent("bad.json")
        try Data("{not json".utf8).write(to: file)
        let broken = try await CLIRunner.runDetached(["serve", "--insecure", "--config", file.path])
        #expect(
            broken.status == 2 && broken.stderr.contains("--config '\(file.path)' is not a JSON object"),
            "\(broken.stderr)"
        )
        let missing = try await CLIRunner.runDetached([
            "serve", "--insecure", "--config", folder.url.path + "/none.json",
        ])
        #expect(missing.status == 2 && missing.stderr.contains("cannot be read"), "\(missing.stderr)")
    }

    @Test("A server configured by imgproxy's environment alone serves URLs signed with its key, and no others")
    func servesFromTheEnvironment() async throws {
        let origin = try await OriginServer.start()
        defer { Task { await origin.stop() } }
        let png = try ImageCodersManager.shared.encode(
            DecodedImage(frames: [.init(bitmap: GeneratedImages.gradient(width: 80, height: 40))], format: .png),
            as: .png
        )
        origin.setRoute("/a.png", .data(png, contentType: "image/png"))
        let folder = try TemporaryDirectory(prefix: "webimage-env")
        defer { folder.remove() }
        let (keyHex, saltHex) = (
            "943b421c9eb07c830af81030552c86009268de4e532ba2ee2eab8247c6da0881",
            "520f986b998545b4785e0defbc4f3c1203f22de2374a3d53cb7a7fe9fea309c5"
        )
        let server = try await ServeCommandTests.RunningServer.start(
            ["--json", "--cache-dir", folder.url.path],
            environment: [
                "IMGPROXY_KEY": keyHex, "IMGPROXY_SALT": saltHex, "IMGPROXY_BIND": "127.0.0.1:0",
                "IMGPROXY_ALLOW_LOOPBACK_SOURCE_ADDRESSES": "true", "IMGPROXY_TTL": "120",
            ]
        )
        defer { _ = server.stop() }
        let signer = try URLSigner(pairs: [try .init(keyHex: keyHex, saltHex: saltHex)])
        let signedPath = "/w:40/plain/\(origin.url("/a.png").absoluteString)@png"
        let session = HTTPSession()
        defer { Task { try? await session.shutdown() } }
        let (body, response) = try await session.data(
            for: .init(
                url: try #require(URL(string: server.url + "/" + signer.signature(for: signedPath) + signedPath))
            )
        )
        #expect(response.statusCode == 200 && response.headers[.cacheControl] == "public, max-age=120")
        #expect(try ImageCodersManager.shared.decode(body).width == 40)
        let (_, unsigned) = try await session.data(
            for: .init(url: try #require(URL(string: server.url + "/_" + signedPath)))
        )
        #expect(unsigned.statusCode == 403)
        #expect(server.stop() == 0)
        let run = try await CLIRunner.runDetached(
            ["serve", "--print-config"],
            environment: ["IMGPROXY_KEY": "zz", "IMGPROXY_SALT": "00"]
        )
        #expect(run.status == 2 && run.stderr.contains("not hex"), "the imgproxy key is used: \(run.stderr)")
        await origin.stop()
    }
}
