import ArgumentParser
import Foundation
import WebImage
import WebImageServer

/// `webimage serve`: the image proxy, imgproxy-compatible URLs, safe by default.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the image proxy (imgproxy-compatible URLs).",
        discussion: """
            URLs: /{signature}/{options}/plain/{source}[@{format}] or /{signature}/{options}/{base64 source}[.{format}],
            /info/… for JSON facts, /health. Signatures are HMAC-SHA256 with --key and --salt (hex; also
            WEBIMAGE_KEY and WEBIMAGE_SALT, comma-separated pairs). Loopback and private sources are refused
            unless allowed. Prints "listening on http://HOST:PORT" when ready; request logs go to standard error.

            Example:
              webimage serve --bind 127.0.0.1:8080 --key "$KEY" --salt "$SALT" --format-negotiation
            """
    )

    @Option(help: "Address to listen on, HOST:PORT (port 0 picks a free one).")
    var bind = "127.0.0.1:8080"

    @Option(help: "Signing key in hex (repeatable, paired with --salt in order: key rotation).")
    var key: [String] = []

    @Option(help: "Signing salt in hex (repeatable, one per --key).")
    var salt: [String] = []

    @Option(name: .customLong("signature-size"), help: "Bytes of the HMAC kept in signatures, 1 to 32.")
    var signatureSize = 32

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
    var stripMetadata = true

    @Flag(
        name: .customLong("keep-copyright"),
        inversion: .prefixedNo,
        help: "Keep the EXIF Artist and Copyright when stripping metadata (default), as IMGPROXY_KEEP_COPYRIGHT."
    )
    var keepCopyright = true

    @Flag(
        name: .customLong("strip-color-profile"),
        inversion: .prefixedNo,
        help: """
            Convert pixels with an embedded colour profile to sRGB and write them untagged (default), as \
            IMGPROXY_STRIP_COLOR_PROFILE; with --no-strip-color-profile (or scp:0 in a URL) the profile is kept.
            """
    )
    var stripColorProfile = true

    @Option(help: "Cache-Control max-age of results, e.g. 1y, 7d or 3600 (seconds).", transform: Units.seconds)
    var ttl: Double = 31_536_000

    @Option(name: .customLong("max-src-file-size"), help: "Largest source, e.g. 32M.", transform: Units.bytes)
    var maxSourceFileSize: Int64 = 33_554_432

    @Option(name: .customLong("max-src-resolution"), help: "Most source megapixels (animation frames summed).")
    var maxSourceResolution: Double = 50

    @Option(name: .customLong("max-result-dimension"), help: "Longest side of a result, in pixels.")
    var maxResultDimension = 8192

    @Option(
        name: .customLong("max-result-resolution"),
        help: "Most result megapixels (each frame); more is refused with 422 before any work."
    )
    var maxResultResolution: Double = 50

    @Option(name: .customLong("max-animation-frames"), help: "Most frames an animated result keeps.")
    var maxAnimationFrames = 256

    @Option(
        name: .customLong("download-timeout"),
        help: "Time allowed for fetching a source, e.g. 5s.",
        transform: Units.positiveSeconds
    )
    var downloadTimeout: Double = 5

    @Option(
        name: .customLong("processing-timeout"),
        help: "Time allowed for decoding, processing and encoding, e.g. 10s.",
        transform: Units.positiveSeconds
    )
    var processingTimeout: Double = 10

    @Option(
        name: .customLong("read-request-timeout"),
        help: "Time a client has to send a whole request (imgproxy's IMGPROXY_READ_REQUEST_TIMEOUT), e.g. 10s.",
        transform: Units.positiveSeconds
    )
    var readRequestTimeout: Double = 10

    @Option(
        name: .customLong("keep-alive-timeout"),
        help: "Time an idle kept-alive connection stays open (imgproxy's IMGPROXY_KEEP_ALIVE_TIMEOUT), e.g. 10s.",
        transform: Units.positiveSeconds
    )
    var keepAliveTimeout: Double = 10

    @Option(
        name: .customLong("max-connections"),
        help: ArgumentHelp(
            "Open client connections at most; past it the longest-idle one is closed for the new one.",
            discussion:
                "Default: three quarters of the open-file limit (raised to its hard limit at start), at most 4096."
        )
    )
    var maxConnections: Int?

    @Option(help: "Time requests in flight get to finish after SIGTERM or SIGINT, e.g. 10s.", transform: Units.seconds)
    var grace: Double = 10

    @Option(help: "Requests worked on at once: fetch, decode, transform and encode (default: the core count).")
    var workers = ProcessInfo.processInfo.activeProcessorCount

    @Option(help: "Requests waiting for a worker beyond those; past it 503 (default: 32 × workers).")
    var queue: Int?

    @Option(
        name: .customLong("metrics-bind"),
        help: "Serve Prometheus metrics at /metrics on this HOST:PORT (a listener of its own)."
    )
    var metricsBind: String?

    @Option(
        name: .customLong("cache-size"),
        help: "Disk space for cached originals, e.g. 1G (0: no limit).",
        transform: Units.bytes
    )
    var cacheSize: Int64 = 1 << 30

    @Option(
        name: .customLong("decoded-cache-size"),
        help: ArgumentHelp(
            "Memory for decoded sources kept for their other sizes, e.g. 512M (0: off).",
            discussion: "Default: 256M, or an eighth of the memory this process may use when less."
        ),
        transform: Units.bytes
    )
    var decodedCacheSize: Int64?

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
    var watermarkOpacity: Double = 1

    @Flag(help: "Print the listening line and request logs as JSON objects.")
    var json = false

    func validate() throws {
        _ = try address()
        _ = try metricsAddress()
        _ = try proxyConfiguration()
        guard workers > 0 else { throw ValidationError("--workers must be at least 1") }
        if let maxConnections, maxConnections < 1 { throw ValidationError("--max-connections must be at least 1") }
        if let queue, queue < 0 { throw ValidationError("--queue must be 0 or more") }
        guard cacheSize >= 0 else { throw ValidationError("--cache-size must be 0 or more") }
        guard maxSourceResolution > 0 else { throw ValidationError("--max-src-resolution must be above 0") }
        guard maxResultDimension > 0 else { throw ValidationError("--max-result-dimension must be at least 1") }
        guard maxResultResolution > 0 else { throw ValidationError("--max-result-resolution must be above 0") }
        guard maxAnimationFrames > 0 else { throw ValidationError("--max-animation-frames must be at least 1") }
        try CacheDirectoryCheck.prepare(cacheFolder, option: "--cache-dir")
    }

    /// `--cache-dir`, or the default `$XDG_CACHE_HOME/webimage/serve`.
    var cacheFolder: URL {
        cacheDirectory.map { URL(fileURLWithPath: $0, isDirectory: true) }
            ?? ImageCache.defaultRootDirectory.appendingPathComponent("serve", isDirectory: true)
    }

    /// `--bind` as host and port.
    func address() throws -> (host: String, port: Int) { try Self.address(bind, option: "--bind") }

    /// `--metrics-bind` as host and port.
    func metricsAddress() throws -> (host: String, port: Int)? {
        try metricsBind.map { try Self.address($0, option: "--metrics-bind") }
    }

    static func address(_ text: String, option: String) throws -> (host: String, port: Int) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
            (0...65535).contains(port)
        else { throw ValidationError("\(option) '\(text)' is not HOST:PORT (port 0 to 65535)") }
        let host = text[..<colon].trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        guard !host.isEmpty else { throw ValidationError("\(option) '\(text)' names no host") }
        return (host, port)
    }

    func proxyConfiguration() throws -> ImageProxyConfiguration {
        let environment = ProcessInfo.processInfo.environment
        var keys = key
        var salts = salt
        if keys.isEmpty, let value = environment["WEBIMAGE_KEY"], !value.isEmpty {
            keys = value.split(separator: ",").map(String.init)
            salts =
                environment["WEBIMAGE_SALT"].map {
                    $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
                } ?? []
        }
        guard keys.count == salts.count else {
            throw ValidationError("give one salt per key: \(keys.count) keys, \(salts.count) salts")
        }
        var signer: URLSigner?
        if keys.isEmpty {
            guard insecure else {
                throw ValidationError(
                    "no signing key: give --key and --salt (or WEBIMAGE_KEY and WEBIMAGE_SALT), or --insecure to accept any signature"
                )
            }
        } else {
            do {
                let pairs = try zip(keys, salts).map { try URLSigner.KeyPair(keyHex: $0, saltHex: $1) }
                signer = try URLSigner(pairs: pairs, size: signatureSize)
            } catch {
                throw ValidationError("--key/--salt: \(error)")
            }
        }
        var configuration = ImageProxyConfiguration(signer: signer)
        configuration.sourcePolicy = SourcePolicy(
            allowsLoopback: allowLoopback,
            allowsPrivateNetworks: allowPrivateNetworks
        )
        for prefix in allowSource {
            do {
                configuration.sourcePolicy.allowedPrefixes.append(try SourcePrefix(prefix))
            } catch {
                throw ValidationError(error.message)
            }
        }
        for entry in preset {
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
            configuration.presets[String(entry[..<equals])] = options
            do {
                _ = try ProcessingOptions(options, presets: configuration.presets)
            } catch {
                throw ValidationError("--preset '\(entry)': \(error.message)")
            }
        }
        configuration.onlyPresets = onlyPresets
        configuration.formatNegotiation = formatNegotiation
        configuration.defaultOptions.stripMetadata = stripMetadata
        configuration.defaultOptions.keepCopyright = keepCopyright
        configuration.defaultOptions.stripColorProfile = stripColorProfile
        configuration.ttl = Int(ttl)
        configuration.maxSourceFileSize = maxSourceFileSize
        configuration.maxSourceResolution = maxSourceResolution
        configuration.maxResultDimension = maxResultDimension
        configuration.maxResultResolution = maxResultResolution
        configuration.maxAnimationFrames = maxAnimationFrames
        configuration.downloadTimeout = .seconds(downloadTimeout)
        configuration.processingTimeout = .seconds(processingTimeout)
        configuration.workers = workers
        configuration.queueLimit = queue
        if let decodedCacheSize { configuration.decodedSourceCacheSize = Int(decodedCacheSize) }
        configuration.connectionLimits.readRequestTimeout = .seconds(readRequestTimeout)
        configuration.connectionLimits.keepAliveTimeout = .seconds(keepAliveTimeout)
        if let maxConnections { configuration.connectionLimits.maxConnections = maxConnections }
        configuration.watermark = try watermarkSource()
        configuration.watermarkOpacity = watermarkOpacity
        return configuration
    }

    /// `--watermark-path`, `--watermark-data` or `--watermark-url` (at most one); the bytes of
    /// the first two are checked to be an image here, so a bad one stops the start (exit 2).
    func watermarkSource() throws -> WatermarkSource? {
        let given = [watermarkPath, watermarkData, watermarkURL].compactMap { $0 }
        guard given.count <= 1 else {
            throw ValidationError("give one of --watermark-path, --watermark-data and --watermark-url")
        }
        guard (0...1).contains(watermarkOpacity) else { throw ValidationError("--watermark-opacity must be 0 to 1") }
        if let watermarkURL {
            guard let url = URL(string: watermarkURL), ["http", "https"].contains(url.scheme?.lowercased() ?? "") else {
                throw ValidationError("--watermark-url '\(watermarkURL)' is not an http(s) URL")
            }
            return .url(url)
        }
        let data: Data
        if let watermarkPath {
            do {
                data = try Data(contentsOf: URL(fileURLWithPath: watermarkPath))
            } catch {
                throw ValidationError(
                    "--watermark-path '\(watermarkPath)' cannot be read: \(error.localizedDescription)"
                )
            }
        } else if let watermarkData {
            let padded = watermarkData + String(repeating: "=", count: (4 - watermarkData.count % 4) % 4)
            guard
                let decoded = Data(
                    base64Encoded: padded.replacingOccurrences(of: "-", with: "+").replacingOccurrences(
                        of: "_",
                        with: "/"
                    )
                )
            else {
                throw ValidationError("--watermark-data is not base64")
            }
            data = decoded
        } else {
            return nil
        }
        let option = watermarkPath != nil ? "--watermark-path" : "--watermark-data"
        guard ImageHeader(data) != nil else { throw ValidationError("\(option): the data is not an image we can read") }
        return .data(data)
    }

    func run() async throws {
        // A long-running service: freed bitmaps and resize buffers (up to 32 MiB each) stay in
        // the heap for the next request instead of being unmapped and faulted in again; at most
        // 64 MiB per malloc arena is kept free. Resident memory stays flat under load (the soak).
        SystemMemory.tuneAllocatorForImageDecoding(trimThreshold: 64 << 20, mmapThreshold: 32 << 20)
        // Before the configuration: the default connection cap follows the raised limit.
        DescriptorLimit.raiseToHardLimit()
        let configuration = try proxyConfiguration()
        let (host, port) = try address()
        let manager = ImageProxy.makeManager(
            configuration: configuration,
            cacheDirectory: cacheFolder,
            cacheSize: cacheSize == 0 ? nil : cacheSize
        )
        let proxy = ImageProxy(configuration: configuration, manager: manager)
        let json = json
        let metrics = try metricsAddress()
        try await ImageProxyServer.run(
            proxy: proxy,
            host: host,
            port: port,
            metrics: metrics,
            gracePeriod: .milliseconds(Int64(grace * 1000)),
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
