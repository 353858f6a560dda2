import ArgumentParser
import Foundation
import WebImage
import WebImageServer

/// `webimage serve`: the image proxy, imgproxy-compatible URLs, safe by default.
///
/// Every flag can also come from the environment (`WEBIMAGE_<FLAG>`), from imgproxy's variable of
/// the same meaning (`IMGPROXY_<NAME>`) or from a JSON config file; see ``ServeSettings``.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the image proxy (imgproxy-compatible URLs).",
        discussion: """
            URLs: /{signature}/{options}/plain/{source}[@{format}] or \
            /{signature}/{options}/{base64 source}[.{format}], /info/… for JSON facts, /health. \
            Signatures are HMAC-SHA256 with --key and --salt (hex, comma-separated pairs in the \
            environment). Loopback and private sources are refused unless allowed. Prints \
            "listening on http://HOST:PORT" when ready; request logs go to standard error.

            Every flag is also read, when not given, from WEBIMAGE_<FLAG> \
            (WEBIMAGE_MAX_SRC_FILE_SIZE=20M), then from imgproxy's IMGPROXY_* variable where the \
            meaning is the same (IMGPROXY_KEY, IMGPROXY_TTL, IMGPROXY_MAX_SRC_RESOLUTION, …), then \
            from the JSON file --config names (keys are the flag names). --print-config shows each \
            value and where it came from, secrets masked.

            Example:
              webimage serve --bind 127.0.0.1:8080 --key "$KEY" --salt "$SALT" \\
                --format-negotiation
            """
    )

    @Option(help: "A JSON file of settings, keys named as the flags (also WEBIMAGE_CONFIG).")
    var config: String?

    @Flag(name: .customLong("print-config"), help: "Print every setting, its value and where it came from; then exit.")
    var printConfig = false

    @Option(help: "Address to listen on, HOST:PORT (port 0 picks a free one). Default 127.0.0.1:8080.")
    var bind: String?

    @Option(help: "Signing key in hex (repeatable, paired with --salt in order: key rotation).")
    var key: [String] = []

    @Option(help: "Signing salt in hex (repeatable, one per --key).")
    var salt: [String] = []

    @Option(name: .customLong("signature-size"), help: "Bytes of the HMAC kept in signatures, 1 to 32 (default 32).")
    var signatureSize: Int?

    @Flag(help: "Accept any signature (no key needed). For local experiments only.")
    var insecure = false

    @Flag(name: .customLong("allow-loopback"), help: "Let sources on loopback addresses through (tests).")
    var allowLoopback = false

    @Flag(name: .customLong("allow-private-networks"), help: "Let sources on private networks through.")
    var allowPrivateNetworks = false

    @Option(name: .customLong("allow-source"), help: "Only fetch sources under this URL prefix (repeatable).")
    var allowSource: [String] = []

    @Option(help: "A named option list, NAME=OPTIONS such as thumb=rs:fill:100:100/q:70 (repeatable).")
    var preset: [String] = []

    @Flag(name: .customLong("only-presets"), help: "Refuse every option that is not a preset.")
    var onlyPresets = false

    @Flag(name: .customLong("format-negotiation"), help: "Pick AVIF or WebP from Accept when the URL names no format.")
    var formatNegotiation = false

    @Flag(
        name: .customLong("strip-metadata"),
        inversion: .prefixedNo,
        help: "Write results without EXIF (default), as imgproxy's IMGPROXY_STRIP_METADATA; sm:0 in a URL keeps it."
    )
    var stripMetadata: Bool?

    @Flag(
        name: .customLong("keep-copyright"),
        inversion: .prefixedNo,
        help: "Keep the EXIF Artist and Copyright when stripping metadata (default), as IMGPROXY_KEEP_COPYRIGHT."
    )
    var keepCopyright: Bool?

    @Flag(
        name: .customLong("strip-color-profile"),
        inversion: .prefixedNo,
        help: """
            Convert pixels with an embedded colour profile to sRGB and write them untagged (default), as \
            IMGPROXY_STRIP_COLOR_PROFILE; with --no-strip-color-profile (or scp:0 in a URL) the profile is kept.
            """
    )
    var stripColorProfile: Bool?

    @Option(help: "Cache-Control max-age of results, e.g. 1y, 7d or 3600 (seconds). Default 1 year.")
    var ttl: String?

    @Option(name: .customLong("max-src-file-size"), help: "Largest source, e.g. 32M (the default; 0: no limit).")
    var maxSourceFileSize: String?

    @Option(name: .customLong("max-src-resolution"), help: "Most source megapixels (animation frames summed; 50).")
    var maxSourceResolution: Double?

    @Option(name: .customLong("max-result-dimension"), help: "Longest side of a result, in pixels (8192; 0: none).")
    var maxResultDimension: Int?

    @Option(
        name: .customLong("max-result-resolution"),
        help: "Most result megapixels (each frame; 50); more is refused with 422 before any work."
    )
    var maxResultResolution: Double?

    @Option(name: .customLong("max-animation-frames"), help: "Most frames an animated result keeps (256).")
    var maxAnimationFrames: Int?

    @Option(
        name: .customLong("max-animation-frame-resolution"),
        help: "Most megapixels of one frame of an animated source; above 0 it replaces the summed check (0: off)."
    )
    var maxAnimationFrameResolution: Double?

    @Option(name: .customLong("download-timeout"), help: "Time allowed for fetching a source, e.g. 5s (the default).")
    var downloadTimeout: String?

    @Option(
        name: .customLong("processing-timeout"),
        help: "Time allowed for decoding, processing and encoding, e.g. 10s (the default)."
    )
    var processingTimeout: String?

    @Option(
        name: .customLong("read-request-timeout"),
        help: "Time a client has to send a whole request (imgproxy's IMGPROXY_READ_REQUEST_TIMEOUT), e.g. 10s."
    )
    var readRequestTimeout: String?

    @Option(
        name: .customLong("keep-alive-timeout"),
        help: "Time an idle kept-alive connection stays open (imgproxy's IMGPROXY_KEEP_ALIVE_TIMEOUT), e.g. 10s."
    )
    var keepAliveTimeout: String?

    @Option(
        name: .customLong("max-connections"),
        help: ArgumentHelp(
            "Open client connections at most; past it the longest-idle one is closed for the new one.",
            discussion:
                "Default: three quarters of the open-file limit (raised to its hard limit at start), at most 4096."
        )
    )
    var maxConnections: Int?

    @Option(help: "Time requests in flight get to finish after SIGTERM or SIGINT, e.g. 10s (the default).")
    var grace: String?

    @Option(
        name: .customLong("free-memory-interval"),
        help: ArgumentHelp(
            "How often freed memory goes back to the system while requests come in, e.g. 10s (the default; 0: never).",
            discussion:
                "imgproxy's IMGPROXY_FREE_MEMORY_INTERVAL. After a burst of large images, resident memory falls back towards what is in use."
        )
    )
    var freeMemoryInterval: String?

    @Option(help: "Requests worked on at once: fetch, decode, transform and encode (default: the core count).")
    var workers: Int?

    @Option(help: "Requests waiting for a worker beyond those; past it 429 (default: 32 × workers; 0: no limit).")
    var queue: Int?

    @Option(
        name: .customLong("metrics-bind"),
        help: "Serve Prometheus metrics at /metrics on this HOST:PORT (a listener of its own)."
    )
    var metricsBind: String?

    @Option(
        name: .customLong("cache-size"),
        help: "Disk space for cached originals, e.g. 1G (the default; 0: no limit)."
    )
    var cacheSize: String?

    @Option(
        name: .customLong("decoded-cache-size"),
        help: ArgumentHelp(
            "Memory for decoded sources kept for their other sizes, e.g. 512M (0: off).",
            discussion: "Default: 256M, or an eighth of the memory this process may use when less."
        )
    )
    var decodedCacheSize: String?

    @Option(
        name: .customLong("cache-dir"),
        help: "Disk cache folder for originals (default: $XDG_CACHE_HOME/webimage/serve)."
    )
    var cacheDirectory: String?

    @Option(name: .customLong("watermark-path"), help: "The watermark image `watermark` lays over results, a file.")
    var watermarkPath: String?

    @Option(name: .customLong("watermark-url"), help: "The watermark image, fetched like a source and cached.")
    var watermarkURL: String?

    @Option(name: .customLong("watermark-data"), help: "The watermark image, as base64.")
    var watermarkData: String?

    @Option(name: .customLong("watermark-opacity"), help: "Multiplies every watermark's opacity, 0 to 1 (default 1).")
    var watermarkOpacity: Double?

    @Option(
        name: .customLong("allowed-sources"),
        help: "Only fetch sources beginning with this pattern, * matching any run without / (repeatable; imgproxy's)."
    )
    var allowedSources: [String] = []

    @Option(name: .customLong("local-root"), help: "Serve local:///PATH sources from this folder (nothing outside it).")
    var localRoot: String?

    @Flag(
        help: ArgumentHelp(
            "Serve s3://BUCKET/KEY sources, signed with the AWS environment's credentials.",
            discussion: "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION, AWS_ENDPOINT_URL_S3."
        )
    )
    var s3 = false

    @Option(name: .customLong("s3-endpoint"), help: "An S3-compatible server's URL (path-style); default AWS.")
    var s3Endpoint: String?

    @Option(name: .customLong("s3-region"), help: "The S3 region (default AWS_REGION, else us-east-1).")
    var s3Region: String?

    @Option(name: .customLong("max-redirects"), help: "Redirects followed per source, each checked (default 5).")
    var maxRedirects: Int?

    @Option(name: .customLong("user-agent"), help: "The User-Agent of source requests.")
    var userAgent: String?

    @Option(
        name: .customLong("source-header"),
        help: "A header sent with every source request, 'Name: value' (repeatable)."
    )
    var sourceHeader: [String] = []

    @Option(
        name: .customLong("allow-origin"),
        help: "Access-Control-Allow-Origin on every answer; OPTIONS is answered."
    )
    var allowOrigin: String?

    @Option(name: .customLong("path-prefix"), help: "The path every proxy URL begins with, such as /img.")
    var pathPrefix: String?

    @Option(help: "The quality of results when the URL sets none, 1 to 100 (default 80).")
    var quality: Int?

    @Option(
        name: .customLong("format-quality"),
        help: "The default quality of one format, FORMAT=Q such as avif=50 (repeatable)."
    )
    var formatQuality: [String] = []

    @Flag(
        name: .customLong("last-modified"),
        help: "Send the source's Last-Modified with results and answer If-Modified-Since (imgproxy's)."
    )
    var lastModified = false

    @Flag(
        name: .customLong("auto-jxl"),
        help: "Pick JPEG XL for still images from Accept when the URL names no format (before AVIF and WebP)."
    )
    var autoJXL = false

    @Flag(name: .customLong("auto-webp"), help: "Pick WebP from Accept when the URL names no format (AVIF stays off).")
    var autoWebP = false

    @Flag(name: .customLong("auto-avif"), help: "Pick AVIF from Accept when the URL names no format (WebP stays off).")
    var autoAVIF = false

    @Flag(name: .customLong("enforce-webp"), help: "Pick WebP from Accept even when the URL names another format.")
    var enforceWebP = false

    @Flag(name: .customLong("enforce-avif"), help: "Pick AVIF from Accept even when the URL names another format.")
    var enforceAVIF = false

    @Flag(name: .customLong("enforce-jxl"), help: "Pick JPEG XL from Accept even when the URL names another format.")
    var enforceJXL = false

    @Option(
        name: .customLong("avif-speed"),
        help: "AVIF encoder speed, 0 (smallest) to 10 (fastest). Default 6 (imgproxy: 8)."
    )
    var avifSpeed: Int?

    @Option(name: .customLong("avif-encoder"), help: "The AV1 encoder for AVIF: auto (default), aom, svt or rav1e.")
    var avifEncoder: String?

    @Option(name: .customLong("jxl-effort"), help: "JPEG XL encoder effort, 1 (fastest) to 9 (smallest). Default 4.")
    var jxlEffort: Int?

    @Flag(
        name: .customLong("set-canonical-header"),
        help: "Send Link: <source URL>; rel=\"canonical\" with results of http(s) sources."
    )
    var setCanonicalHeader = false

    @OptionGroup(title: "Quality per image and format:best")
    var perImage: ServeQualityArguments

    @Flag(name: .customLong("jpeg-progressive"), help: "Write progressive JPEG results.")
    var jpegProgressive = false

    @Flag(name: .customLong("png-interlaced"), help: "Write Adam7-interlaced PNG results.")
    var pngInterlaced = false

    @Flag(
        name: .customLong("auto-rotate"),
        inversion: .prefixedNo,
        help: "Apply EXIF orientation (default; ar:0 in a URL)."
    )
    var autoRotate: Bool?

    @Flag(
        name: .customLong("enforce-thumbnail"),
        help: "Render from a HEIF's embedded thumbnail (eth:1 for every URL)."
    )
    var enforceThumbnail = false

    @Option(
        name: .customLong("fallback-image-path"),
        help: "Rendered in place of a source that cannot be fetched, a file."
    )
    var fallbackImagePath: String?

    @Option(name: .customLong("fallback-image-url"), help: "The fallback image, fetched like a source and cached.")
    var fallbackImageURL: String?

    @Option(name: .customLong("fallback-image-data"), help: "The fallback image, as base64.")
    var fallbackImageData: String?

    @Option(
        name: .customLong("fallback-image-http-code"),
        help: "The status of answers from the fallback image (200; 0: the source failure's)."
    )
    var fallbackImageStatus: Int?

    @Option(
        name: .customLong("fallback-image-ttl"),
        help: "Cache-Control max-age of answers from the fallback image (--ttl)."
    )
    var fallbackImageTTL: String?

    @Flag(help: "Print the listening line and request logs as JSON objects.")
    var json = false

    /// Everything `serve` runs with, each setting resolved once.
    struct Resolved {
        var proxy: ImageProxyConfiguration
        var bind: (host: String, port: Int)
        var metricsBind: (host: String, port: Int)?
        var grace: Double
        var cacheFolder: URL
        var cacheSize: Int64
        var json: Bool
        var settings: ServeSettings
    }

    func validate() throws {
        let resolved = try resolve()
        try CacheDirectoryCheck.prepare(resolved.cacheFolder, option: "--cache-dir")
    }

    /// Every setting from its flag, the environment, the config file or its default.
    func resolve(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> Resolved {
        let settings = try ServeSettings(environment: environment, configFile: config)
        var proxy = try proxyConfiguration(settings)
        proxy.connectionLimits = try connectionLimits(settings)
        proxy.freeMemoryInterval = try memoryReleaseInterval(settings)
        let bindText = try settings.value("bind", flag: bind, default: "127.0.0.1:8080", imgproxy: ["IMGPROXY_BIND"]) {
            ServeSettings.imgproxyBind($0)
        }
        let metricsText = try settings.optional(
            "metrics-bind",
            flag: metricsBind,
            imgproxy: ["IMGPROXY_PROMETHEUS_BIND"]
        ) {
            ServeSettings.imgproxyBind($0)
        }
        let folder = try settings.optional("cache-dir", flag: cacheDirectory) { $0 }
        return Resolved(
            proxy: proxy,
            bind: try Self.address(bindText, option: "--bind"),
            metricsBind: try metricsText.map { try Self.address($0, option: "--metrics-bind") },
            grace: try settings.value(
                "grace",
                flag: try ServeSettings.parsed(grace, "grace", Units.seconds),
                default: 10,
                imgproxy: ["IMGPROXY_GRACEFUL_STOP_TIMEOUT"],
                parse: Units.seconds
            ),
            cacheFolder: folder.map { URL(fileURLWithPath: $0, isDirectory: true) }
                ?? ImageCache.defaultRootDirectory.appendingPathComponent("serve", isDirectory: true),
            cacheSize: try settings.value(
                "cache-size",
                flag: try ServeSettings.parsed(cacheSize, "cache-size", Units.bytes),
                default: 1 << 30,
                parse: Units.bytes
            ),
            json: try settings.switchedOn("json", flag: json),
            settings: settings
        )
    }

    static func address(_ text: String, option: String) throws -> (host: String, port: Int) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
            (0...65535).contains(port)
        else { throw ValidationError("\(option) '\(text)' is not HOST:PORT (port 0 to 65535)") }
        let host = text[..<colon].trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        guard !host.isEmpty else { throw ValidationError("\(option) '\(text)' names no host") }
        return (host, port)
    }

    func run() async throws {
        // A long-running service: freed bitmaps and resize buffers (up to 32 MiB each) stay in
        // the heap for the next request instead of being unmapped and faulted in again; at most
        // 64 MiB per malloc arena is kept free. Resident memory stays flat under load (the soak).
        SystemMemory.tuneAllocatorForImageDecoding(trimThreshold: 64 << 20, mmapThreshold: 32 << 20)
        // Before the configuration: the default connection cap follows the raised limit.
        DescriptorLimit.raiseToHardLimit()
        let resolved = try resolve()
        if printConfig {
            StandardStream.line(resolved.settings.table)
            return
        }
        let configuration = resolved.proxy
        let (host, port) = resolved.bind
        let manager = ImageProxy.makeManager(
            configuration: configuration,
            cacheDirectory: resolved.cacheFolder,
            cacheSize: resolved.cacheSize == 0 ? nil : resolved.cacheSize
        )
        let proxy = ImageProxy(configuration: configuration, manager: manager)
        let json = resolved.json
        let metrics = resolved.metricsBind
        let requestLog = RequestLogWriter { dropped in
            json
                ? JSONValue.object([("dropped_log_lines", .int(dropped))]).serialized
                : "\(dropped) request log lines dropped: standard error was not read fast enough"
        }
        var failure: (any Error)?
        do {
            try await ImageProxyServer.run(
                proxy: proxy,
                host: host,
                port: port,
                metrics: metrics,
                gracePeriod: .milliseconds(Int64(resolved.grace * 1000)),
                requestLog: { entry in requestLog.write(Self.logLine(entry, json: json)) },
                onListening: { listening in
                    let url = ImageProxyServer.url(host: host, port: listening.port)
                    let metricsURL = metrics.flatMap { metrics in
                        listening.metricsPort.map { ImageProxyServer.url(host: metrics.host, port: $0) + "/metrics" }
                    }
                    if json {
                        var fields: [(String, JSONValue)] = [("listening", .string(url))]
                        if let metricsURL { fields.append(("metrics", .string(metricsURL))) }
                        JSONLineWriter.write(.object(fields))
                    } else {
                        StandardStream.line("listening on \(url)")
                        if let metricsURL { StandardStream.line("metrics on \(metricsURL)") }
                    }
                }
            )
        } catch {
            failure = error
        }
        // Lines still waiting reach standard error before the process ends, unless nobody reads it.
        _ = await requestLog.flush(timeout: .seconds(2))
        if let failure { throw failure }
    }

    /// One request's log line: text, or a JSON object with `--json`.
    private static func logLine(_ entry: RequestLogEntry, json: Bool) -> String {
        guard json else { return entry.text }
        var fields: [(String, JSONValue)] = [
            ("status", .int(entry.status)),
            ("ms", .double((entry.milliseconds * 10).rounded() / 10)),
            ("path", .string(entry.path)),
        ]
        if let host = entry.sourceHost { fields.append(("source", .string(host))) }
        if let code = entry.errorCode { fields.append(("error", .string(code))) }
        return JSONValue.object(fields).serialized
    }
}
