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
            URLs: /{signature}/{options}/plain/{source}[@{format}] or /{signature}/{options}/{base64 source}[.{format}],
            /info/… for JSON facts, /health. Signatures are HMAC-SHA256 with --key and --salt (hex, comma-separated
            pairs in the environment). Loopback and private sources are refused unless allowed. Prints
            "listening on http://HOST:PORT" when ready; request logs go to standard error.

            Every flag is also read, when not given, from WEBIMAGE_<FLAG> (WEBIMAGE_MAX_SRC_FILE_SIZE=20M), then
            from imgproxy's IMGPROXY_* variable where the meaning is the same (IMGPROXY_KEY, IMGPROXY_TTL,
            IMGPROXY_MAX_SRC_RESOLUTION, …), then from the JSON file --config names (keys are the flag names).
            --print-config shows each value and where it came from, secrets masked.

            Example:
              webimage serve --bind 127.0.0.1:8080 --key "$KEY" --salt "$SALT" --format-negotiation
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

    @Option(help: "Requests worked on at once: fetch, decode, transform and encode (default: the core count).")
    var workers: Int?

    @Option(help: "Requests waiting for a worker beyond those; past it 503 (default: 32 × workers).")
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

    @Option(name: .customLong("fallback-image-http-code"), help: "The status of answers from the fallback image (200).")
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

    /// The signer from `--key`/`--salt` (or the environment); `nil` with `--insecure`.
    private func signer(_ settings: ServeSettings) throws -> URLSigner? {
        let keys = try settings.list("key", flags: key, imgproxy: ["IMGPROXY_KEY"], secret: true)
        let salts = try settings.list("salt", flags: salt, imgproxy: ["IMGPROXY_SALT"], secret: true)
        let size = try settings.value(
            "signature-size",
            flag: signatureSize,
            default: 32,
            imgproxy: ["IMGPROXY_SIGNATURE_SIZE"],
            parse: ServeSettings.integer
        )
        let insecure = try settings.switchedOn("insecure", flag: insecure)
        guard keys.count == salts.count else {
            throw ValidationError("give one salt per key: \(keys.count) keys, \(salts.count) salts")
        }
        guard !keys.isEmpty else {
            guard insecure else {
                throw ValidationError(
                    "no signing key: give --key and --salt (or WEBIMAGE_KEY and WEBIMAGE_SALT), or --insecure to accept any signature"
                )
            }
            return nil
        }
        do {
            let pairs = try zip(keys, salts).map { try URLSigner.KeyPair(keyHex: $0, saltHex: $1) }
            return try URLSigner(pairs: pairs, size: size)
        } catch {
            throw ValidationError("--key/--salt: \(error)")
        }
    }

    /// Which sources may be fetched.
    private func sourcePolicy(_ settings: ServeSettings) throws -> SourcePolicy {
        var policy = SourcePolicy(
            allowsLoopback: try settings.switchedOn(
                "allow-loopback",
                flag: allowLoopback,
                imgproxy: ["IMGPROXY_ALLOW_LOOPBACK_SOURCE_ADDRESSES"]
            ),
            allowsPrivateNetworks: try settings.switchedOn(
                "allow-private-networks",
                flag: allowPrivateNetworks,
                imgproxy: ["IMGPROXY_ALLOW_PRIVATE_SOURCE_ADDRESSES"]
            )
        )
        for prefix in try settings.list("allow-source", flags: allowSource) {
            do {
                policy.allowedPrefixes.append(try SourcePrefix(prefix))
            } catch {
                throw ValidationError(error.message)
            }
        }
        return policy
    }

    /// `--preset NAME=OPTIONS` entries (imgproxy's `IMGPROXY_PRESETS`, comma-separated), each
    /// checked to parse.
    private func presets(_ settings: ServeSettings) throws -> [String: [ProxyOption]] {
        var presets: [String: [ProxyOption]] = [:]
        for entry in try settings.list("preset", flags: preset, imgproxy: ["IMGPROXY_PRESETS"]) {
            guard let equals = entry.firstIndex(of: "="), !entry[..<equals].isEmpty else {
                throw ValidationError("--preset '\(entry)' is not NAME=OPTIONS")
            }
            var options: [ProxyOption] = []
            for segment in entry[entry.index(after: equals)...].split(separator: "/") {
                guard let option = ProxyOption(segment: segment) else {
                    throw ValidationError("--preset '\(entry)': '\(segment)' is not an option (name:value)")
                }
                options.append(option)
            }
            presets[String(entry[..<equals])] = options
            do {
                _ = try ProcessingOptions(options, presets: presets)
            } catch {
                throw ValidationError("--preset '\(entry)': \(error.message)")
            }
        }
        return presets
    }

    func proxyConfiguration(_ settings: ServeSettings) throws -> ImageProxyConfiguration {
        var configuration = ImageProxyConfiguration(signer: try signer(settings))
        configuration.sourcePolicy = try sourcePolicy(settings)
        configuration.presets = try presets(settings)
        configuration.onlyPresets = try settings.switchedOn(
            "only-presets",
            flag: onlyPresets,
            imgproxy: ["IMGPROXY_ONLY_PRESETS"]
        )
        configuration.formatNegotiation = try settings.switchedOn("format-negotiation", flag: formatNegotiation)
        configuration.defaultOptions = try defaultOptions(settings)
        try applyLimits(settings, to: &configuration)
        configuration.workers = try settings.value(
            "workers",
            flag: workers,
            default: ProcessInfo.processInfo.activeProcessorCount,
            imgproxy: ["IMGPROXY_WORKERS", "IMGPROXY_CONCURRENCY"],
            parse: ServeSettings.integer
        )
        guard configuration.workers > 0 else { throw ValidationError("--workers must be at least 1") }
        configuration.queueLimit = try settings.optional(
            "queue",
            flag: queue,
            imgproxy: ["IMGPROXY_REQUESTS_QUEUE_SIZE"],
            parse: ServeSettings.integer
        )
        if let queue = configuration.queueLimit, queue < 0 { throw ValidationError("--queue must be 0 or more") }
        if let size = try settings.optional(
            "decoded-cache-size",
            flag: try ServeSettings.parsed(decodedCacheSize, "decoded-cache-size", Units.bytes),
            parse: Units.bytes
        ) {
            configuration.decodedSourceCacheSize = Int(size)
        }
        try applySourceOptions(settings, to: &configuration)
        try applyAnswerOptions(settings, to: &configuration)
        configuration.watermark = try watermarkSource(settings)
        configuration.watermarkOpacity = try settings.value(
            "watermark-opacity",
            flag: watermarkOpacity,
            default: 1,
            imgproxy: ["IMGPROXY_WATERMARK_OPACITY"],
            parse: ServeSettings.number
        )
        guard (0...1).contains(configuration.watermarkOpacity) else {
            throw ValidationError("--watermark-opacity must be 0 to 1")
        }
        return configuration
    }

    /// The options every request starts from: metadata and colour profile handling.
    private func defaultOptions(_ settings: ServeSettings) throws -> ProcessingOptions {
        var options = ProcessingOptions()
        options.stripMetadata = try settings.value(
            "strip-metadata",
            flag: stripMetadata,
            default: true,
            imgproxy: ["IMGPROXY_STRIP_METADATA"],
            parse: ServeSettings.boolean
        )
        options.keepCopyright = try settings.value(
            "keep-copyright",
            flag: keepCopyright,
            default: true,
            imgproxy: ["IMGPROXY_KEEP_COPYRIGHT"],
            parse: ServeSettings.boolean
        )
        options.autoRotate = try settings.value(
            "auto-rotate",
            flag: autoRotate,
            default: true,
            imgproxy: ["IMGPROXY_AUTO_ROTATE"],
            parse: ServeSettings.boolean
        )
        options.enforceThumbnail = try settings.switchedOn(
            "enforce-thumbnail",
            flag: enforceThumbnail,
            imgproxy: ["IMGPROXY_ENFORCE_THUMBNAIL"]
        )
        options.stripColorProfile = try settings.value(
            "strip-color-profile",
            flag: stripColorProfile,
            default: true,
            imgproxy: ["IMGPROXY_STRIP_COLOR_PROFILE"],
            parse: ServeSettings.boolean
        )
        return options
    }

    /// Sizes, frames, time and cache lifetime.
    private func applyLimits(_ settings: ServeSettings, to configuration: inout ImageProxyConfiguration) throws {
        configuration.ttl = Int(
            try settings.value(
                "ttl",
                flag: try ServeSettings.parsed(ttl, "ttl", Units.seconds),
                default: 31_536_000,
                imgproxy: ["IMGPROXY_TTL"],
                parse: Units.seconds
            )
        )
        configuration.maxSourceFileSize = try settings.value(
            "max-src-file-size",
            flag: try ServeSettings.parsed(maxSourceFileSize, "max-src-file-size", Self.sourceFileSize),
            default: 33_554_432,
            imgproxy: ["IMGPROXY_MAX_SRC_FILE_SIZE"],
            parse: Self.sourceFileSize
        )
        configuration.maxSourceResolution = try settings.value(
            "max-src-resolution",
            flag: maxSourceResolution,
            default: 50,
            imgproxy: ["IMGPROXY_MAX_SRC_RESOLUTION"],
            parse: ServeSettings.number
        )
        guard configuration.maxSourceResolution > 0 else {
            throw ValidationError("--max-src-resolution must be above 0")
        }
        configuration.maxResultDimension = try settings.value(
            "max-result-dimension",
            flag: maxResultDimension,
            default: 8192,
            imgproxy: ["IMGPROXY_MAX_RESULT_DIMENSION"]
        ) { try ServeSettings.integer(ServeSettings.unlimitedWhenZero($0, unlimited: "65535")) }
        if configuration.maxResultDimension == 0 { configuration.maxResultDimension = 65_535 }
        guard configuration.maxResultDimension > 0 else {
            throw ValidationError("--max-result-dimension must be at least 1")
        }
        configuration.maxResultResolution = try settings.value(
            "max-result-resolution",
            flag: maxResultResolution,
            default: 50,
            parse: ServeSettings.number
        )
        guard configuration.maxResultResolution > 0 else {
            throw ValidationError("--max-result-resolution must be above 0")
        }
        configuration.maxAnimationFrames = try settings.value(
            "max-animation-frames",
            flag: maxAnimationFrames,
            default: 256,
            imgproxy: ["IMGPROXY_MAX_ANIMATION_FRAMES"],
            parse: ServeSettings.integer
        )
        guard configuration.maxAnimationFrames > 0 else {
            throw ValidationError("--max-animation-frames must be at least 1")
        }
        configuration.downloadTimeout = .seconds(
            try settings.value(
                "download-timeout",
                flag: try ServeSettings.parsed(downloadTimeout, "download-timeout", Units.positiveSeconds),
                default: 5,
                imgproxy: ["IMGPROXY_DOWNLOAD_TIMEOUT"],
                parse: Units.positiveSeconds
            )
        )
        configuration.processingTimeout = .seconds(
            try settings.value(
                "processing-timeout",
                flag: try ServeSettings.parsed(processingTimeout, "processing-timeout", Units.positiveSeconds),
                default: 10,
                parse: Units.positiveSeconds
            )
        )
    }

    /// How sources are fetched: patterns, redirects and headers.
    private func applySourceOptions(_ settings: ServeSettings, to configuration: inout ImageProxyConfiguration) throws {
        configuration.sourcePolicy.allowedPatterns = try settings.list(
            "allowed-sources",
            flags: allowedSources,
            imgproxy: ["IMGPROXY_ALLOWED_SOURCES"]
        ).map(SourcePattern.init)
        if let root = try settings.optional(
            "local-root",
            flag: localRoot,
            imgproxy: ["IMGPROXY_LOCAL_FILESYSTEM_ROOT"],
            parse: { $0 }
        ) {
            do {
                configuration.localRoot = try LocalSourceRoot(root)
            } catch {
                throw ValidationError(error.message)
            }
        }
        configuration.s3 = try s3Configuration(settings)
        configuration.maxRedirects = try settings.value(
            "max-redirects",
            flag: maxRedirects,
            default: 5,
            imgproxy: ["IMGPROXY_MAX_REDIRECTS"],
            parse: ServeSettings.integer
        )
        guard configuration.maxRedirects >= 0 else { throw ValidationError("--max-redirects must be 0 or more") }
        for header in try settings.list("source-header", flags: sourceHeader, separator: "\n") {
            guard let colon = header.firstIndex(of: ":"), !header[..<colon].isEmpty,
                !header.contains(where: { $0 == "\r" || $0 == "\n" })
            else { throw ValidationError("--source-header '\(header)' is not 'Name: value'") }
            let value = header[header.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            configuration.sourceHeaders.append((String(header[..<colon]), value))
        }
        if let agent = try settings.optional(
            "user-agent",
            flag: userAgent,
            imgproxy: ["IMGPROXY_USER_AGENT"],
            parse: { $0 }
        ) {
            configuration.sourceHeaders.append(("User-Agent", agent))
        }
    }

    /// `--s3`: the AWS environment's credentials, the endpoint and region flags over theirs.
    private func s3Configuration(_ settings: ServeSettings) throws -> S3Configuration? {
        guard try settings.switchedOn("s3", flag: s3, imgproxy: ["IMGPROXY_USE_S3"]) else { return nil }
        guard var configuration = S3Configuration.fromEnvironment(settings.environment) else {
            throw ValidationError("--s3 needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment")
        }
        if let endpoint = try settings.optional(
            "s3-endpoint",
            flag: s3Endpoint,
            imgproxy: ["IMGPROXY_S3_ENDPOINT"],
            parse: { $0 }
        ) {
            guard let url = URL(string: endpoint), ["http", "https"].contains(url.scheme?.lowercased() ?? "") else {
                throw ValidationError("--s3-endpoint '\(endpoint)' is not an http(s) URL")
            }
            configuration.endpoint = url
        }
        if let region = try settings.optional(
            "s3-region",
            flag: s3Region,
            imgproxy: ["IMGPROXY_S3_REGION"],
            parse: { $0 }
        ) {
            configuration.region = region
        }
        return configuration
    }

    /// How answers are made: CORS, the path prefix, qualities and the fallback image.
    private func applyAnswerOptions(_ settings: ServeSettings, to configuration: inout ImageProxyConfiguration) throws {
        configuration.allowOrigin = try settings.optional(
            "allow-origin",
            flag: allowOrigin,
            imgproxy: ["IMGPROXY_ALLOW_ORIGIN"]
        ) { $0 }
        let prefix = try settings.value(
            "path-prefix",
            flag: pathPrefix,
            default: "",
            imgproxy: ["IMGPROXY_PATH_PREFIX"]
        ) { $0 }
        guard prefix.isEmpty || prefix.hasPrefix("/") else {
            throw ValidationError("--path-prefix '\(prefix)' must begin with /")
        }
        configuration.pathPrefix = prefix
        configuration.defaultQuality = try settings.value(
            "quality",
            flag: quality,
            default: 80,
            imgproxy: ["IMGPROXY_QUALITY"],
            parse: ServeSettings.integer
        )
        guard (1...100).contains(configuration.defaultQuality) else {
            throw ValidationError("--quality must be 1 to 100")
        }
        configuration.jpegProgressive = try settings.switchedOn(
            "jpeg-progressive",
            flag: jpegProgressive,
            imgproxy: ["IMGPROXY_JPEG_PROGRESSIVE"]
        )
        configuration.pngInterlaced = try settings.switchedOn(
            "png-interlaced",
            flag: pngInterlaced,
            imgproxy: ["IMGPROXY_PNG_INTERLACED"]
        )
        for entry in try settings.list("format-quality", flags: formatQuality, imgproxy: ["IMGPROXY_FORMAT_QUALITY"]) {
            let parts = entry.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, let format = ProcessingOptions.format(named: parts[0].lowercased()),
                let value = Int(parts[1]), (1...100).contains(value)
            else { throw ValidationError("--format-quality '\(entry)' is not FORMAT=QUALITY (1 to 100)") }
            configuration.formatQuality[format] = value
        }
        let path = try settings.optional(
            "fallback-image-path",
            flag: fallbackImagePath,
            imgproxy: ["IMGPROXY_FALLBACK_IMAGE_PATH"]
        ) { $0 }
        let base64 = try settings.optional(
            "fallback-image-data",
            flag: fallbackImageData,
            imgproxy: ["IMGPROXY_FALLBACK_IMAGE_DATA"]
        ) { $0 }
        let link = try settings.optional(
            "fallback-image-url",
            flag: fallbackImageURL,
            imgproxy: ["IMGPROXY_FALLBACK_IMAGE_URL"]
        ) { $0 }
        configuration.fallbackImage = try ImageSourceOption.resolve(
            name: "fallback-image",
            path: path,
            base64: base64,
            url: link
        )
        .map { source in
            switch source {
            case .data(let data): .data(data)
            case .url(let url): .url(url)
            }
        }
        configuration.fallbackImageStatus = try settings.value(
            "fallback-image-http-code",
            flag: fallbackImageStatus,
            default: 200,
            imgproxy: ["IMGPROXY_FALLBACK_IMAGE_HTTP_CODE"],
            parse: ServeSettings.integer
        )
        guard (200...599).contains(configuration.fallbackImageStatus) else {
            throw ValidationError("--fallback-image-http-code must be an HTTP status from 200 to 599")
        }
        configuration.fallbackImageTTL = try settings.optional(
            "fallback-image-ttl",
            flag: try ServeSettings.parsed(fallbackImageTTL, "fallback-image-ttl", Units.seconds),
            imgproxy: ["IMGPROXY_FALLBACK_IMAGE_TTL"],
            parse: Units.seconds
        ).flatMap { $0 > 0 ? Int($0) : nil }
    }

    /// `--max-src-file-size`: a size; 0 (imgproxy's "no limit") is no limit.
    static func sourceFileSize(_ text: String) throws -> Int64 {
        let bytes = try Units.bytes(text)
        return bytes == 0 ? Int64.max : bytes
    }

    /// The HTTP server's hold on client connections.
    private func connectionLimits(_ settings: ServeSettings) throws -> ConnectionLimits {
        var limits = ConnectionLimits()
        limits.readRequestTimeout = .seconds(
            try settings.value(
                "read-request-timeout",
                flag: try ServeSettings.parsed(readRequestTimeout, "read-request-timeout", Units.positiveSeconds),
                default: 10,
                imgproxy: ["IMGPROXY_READ_REQUEST_TIMEOUT"],
                parse: Units.positiveSeconds
            )
        )
        limits.keepAliveTimeout = .seconds(
            try settings.value(
                "keep-alive-timeout",
                flag: try ServeSettings.parsed(keepAliveTimeout, "keep-alive-timeout", Units.positiveSeconds),
                default: 10,
                imgproxy: ["IMGPROXY_KEEP_ALIVE_TIMEOUT"],
                parse: Units.positiveSeconds
            )
        )
        if let maxConnections = try settings.optional(
            "max-connections",
            flag: maxConnections,
            imgproxy: ["IMGPROXY_MAX_CLIENTS"],
            parse: ServeSettings.integer
        ) {
            guard maxConnections >= 1 else { throw ValidationError("--max-connections must be at least 1") }
            limits.maxConnections = maxConnections
        }
        return limits
    }

    /// `--watermark-path`, `--watermark-data` or `--watermark-url` (at most one); the bytes of
    /// the first two are checked to be an image here, so a bad one stops the start (exit 2).
    func watermarkSource(_ settings: ServeSettings) throws -> ConfiguredImage? {
        let path = try settings.optional("watermark-path", flag: watermarkPath, imgproxy: ["IMGPROXY_WATERMARK_PATH"]) {
            $0
        }
        let base64 = try settings.optional("watermark-data", flag: watermarkData, imgproxy: ["IMGPROXY_WATERMARK_DATA"])
        { $0 }
        let link = try settings.optional("watermark-url", flag: watermarkURL, imgproxy: ["IMGPROXY_WATERMARK_URL"]) {
            $0
        }
        return try ImageSourceOption.resolve(name: "watermark", path: path, base64: base64, url: link).map { source in
            switch source {
            case .data(let data): .data(data)
            case .url(let url): .url(url)
            }
        }
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
        try await ImageProxyServer.run(
            proxy: proxy,
            host: host,
            port: port,
            metrics: metrics,
            gracePeriod: .milliseconds(Int64(resolved.grace * 1000)),
            requestLog: { entry in
                if json {
                    var fields: [(String, JSONValue)] = [
                        ("status", .int(entry.status)),
                        ("ms", .double((entry.milliseconds * 10).rounded() / 10)),
                        ("path", .string(entry.path)),
                    ]
                    if let host = entry.sourceHost { fields.append(("source", .string(host))) }
                    if let code = entry.errorCode { fields.append(("error", .string(code))) }
                    Diagnostics.write(JSONValue.object(fields).serialized)
                } else {
                    Diagnostics.write(entry.text)
                }
            },
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
    }
}
