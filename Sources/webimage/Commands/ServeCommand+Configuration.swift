import ArgumentParser
import Foundation
import WebImage
import WebImageServer

/// `serve`'s settings made into the proxy's configuration, each from its flag, the environment,
/// the config file or its default (``ServeSettings``).
extension ServeCommand {
    /// The signer from `--key`/`--salt` (or the environment); `nil` with `--insecure`.
    func signer(_ settings: ServeSettings) throws -> URLSigner? {
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
    func sourcePolicy(_ settings: ServeSettings) throws -> SourcePolicy {
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

    /// `--preset NAME=OPTIONS` entries (`IMGPROXY_PRESETS`, comma-separated), each checked to parse.
    func presets(_ settings: ServeSettings) throws -> [String: [ProxyOption]] {
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
        if configuration.queueLimit == 0 { configuration.queueLimit = .max }  // imgproxy's "no limit"
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
    func defaultOptions(_ settings: ServeSettings) throws -> ProcessingOptions {
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
    func applyLimits(_ settings: ServeSettings, to configuration: inout ImageProxyConfiguration) throws {
        let defaults = ProxyLimits.defaults
        configuration.ttl = Int(
            try settings.value(
                "ttl",
                flag: try ServeSettings.parsed(ttl, "ttl", Units.seconds),
                default: 31_536_000,
                imgproxy: ["IMGPROXY_TTL"],
                parse: Units.seconds
            )
        )
        configuration.limits.maxSourceFileSize = try settings.value(
            "max-src-file-size",
            flag: try ServeSettings.parsed(maxSourceFileSize, "max-src-file-size", Self.sourceFileSize),
            default: defaults.maxSourceFileSize,
            imgproxy: ["IMGPROXY_MAX_SRC_FILE_SIZE"],
            parse: Self.sourceFileSize
        )
        try applyPixelLimits(settings, to: &configuration)
        configuration.limits.downloadTimeout = .seconds(
            try settings.value(
                "download-timeout",
                flag: try ServeSettings.parsed(downloadTimeout, "download-timeout", Units.positiveSeconds),
                default: defaults.downloadTimeout.seconds,
                imgproxy: ["IMGPROXY_DOWNLOAD_TIMEOUT"],
                parse: Units.positiveSeconds
            )
        )
        configuration.limits.processingTimeout = .seconds(
            try settings.value(
                "processing-timeout",
                flag: try ServeSettings.parsed(processingTimeout, "processing-timeout", Units.positiveSeconds),
                default: defaults.processingTimeout.seconds,
                parse: Units.positiveSeconds
            )
        )
    }

    /// Source and result resolution, animation frames.
    func applyPixelLimits(_ settings: ServeSettings, to configuration: inout ImageProxyConfiguration) throws {
        let defaults = ProxyLimits.defaults
        configuration.limits.maxSourceResolution = try settings.value(
            "max-src-resolution",
            flag: maxSourceResolution,
            default: defaults.maxSourceResolution,
            imgproxy: ["IMGPROXY_MAX_SRC_RESOLUTION"],
            parse: ServeSettings.number
        )
        guard configuration.limits.maxSourceResolution > 0 else {
            throw ValidationError("--max-src-resolution must be above 0")
        }
        configuration.limits.maxAnimationFrameResolution = try settings.value(
            "max-animation-frame-resolution",
            flag: maxAnimationFrameResolution,
            default: defaults.maxAnimationFrameResolution,
            imgproxy: ["IMGPROXY_MAX_ANIMATION_FRAME_RESOLUTION"],
            parse: ServeSettings.number
        )
        guard configuration.limits.maxAnimationFrameResolution >= 0 else {
            throw ValidationError("--max-animation-frame-resolution must be 0 (off) or above")
        }
        configuration.limits.maxResultDimension = try settings.value(
            "max-result-dimension",
            flag: maxResultDimension,
            default: defaults.maxResultDimension,
            imgproxy: ["IMGPROXY_MAX_RESULT_DIMENSION"]
        ) { try ServeSettings.integer(ServeSettings.unlimitedWhenZero($0, unlimited: "65535")) }
        if configuration.limits.maxResultDimension == 0 { configuration.limits.maxResultDimension = 65_535 }
        guard configuration.limits.maxResultDimension > 0 else {
            throw ValidationError("--max-result-dimension must be at least 1")
        }
        configuration.limits.maxResultResolution = try settings.value(
            "max-result-resolution",
            flag: maxResultResolution,
            default: defaults.maxResultResolution,
            parse: ServeSettings.number
        )
        guard configuration.limits.maxResultResolution > 0 else {
            throw ValidationError("--max-result-resolution must be above 0")
        }
        configuration.limits.maxAnimationFrames = try settings.value(
            "max-animation-frames",
            flag: maxAnimationFrames,
            default: defaults.maxAnimationFrames,
            imgproxy: ["IMGPROXY_MAX_ANIMATION_FRAMES"],
            parse: ServeSettings.integer
        )
        guard configuration.limits.maxAnimationFrames > 0 else {
            throw ValidationError("--max-animation-frames must be at least 1")
        }
    }

    /// How sources are fetched: patterns, redirects and headers.
    func applySourceOptions(_ settings: ServeSettings, to configuration: inout ImageProxyConfiguration) throws {
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
        configuration.limits.maxRedirects = try settings.value(
            "max-redirects",
            flag: maxRedirects,
            default: ProxyLimits.defaults.maxRedirects,
            imgproxy: ["IMGPROXY_MAX_REDIRECTS"],
            parse: ServeSettings.integer
        )
        guard configuration.limits.maxRedirects >= 0 else { throw ValidationError("--max-redirects must be 0 or more") }
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
    func s3Configuration(_ settings: ServeSettings) throws -> S3Configuration? {
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
    func applyAnswerOptions(_ settings: ServeSettings, to configuration: inout ImageProxyConfiguration) throws {
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
        configuration.usesLastModified = try settings.switchedOn(
            "last-modified",
            flag: lastModified,
            imgproxy: ["IMGPROXY_USE_LAST_MODIFIED"]
        )
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
        try applyFallbackImage(settings, to: &configuration)
        try applyEncoders(settings, to: &configuration)
    }

    /// The fallback image, its status and its lifetime.
    func applyFallbackImage(_ settings: ServeSettings, to configuration: inout ImageProxyConfiguration) throws {
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
        guard configuration.fallbackImageStatus == 0 || (200...599).contains(configuration.fallbackImageStatus) else {
            throw ValidationError(
                "--fallback-image-http-code must be an HTTP status from 200 to 599, or 0 for the source failure's"
            )
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
}
