import ArgumentParser
import Foundation
import Logging
import NIOPosix
import WebImage
import WebImageHTTP

/// The options `fetch` and `prefetch` share: where the cache lives, how the network behaves.
struct LoadingOptions: ParsableArguments {
    @Option(name: .customLong("cache-dir"), help: "Disk cache folder (default: $XDG_CACHE_HOME/webimage/default).")
    var cacheDirectory: String?

    @Flag(name: .customLong("no-disk-cache"), help: "Keep images in memory only.")
    var noDiskCache = false

    @Option(
        name: .customLong("memory-cache"),
        help: "Decoded images kept in memory during the run, e.g. 32M (default; 0: none).",
        transform: Units.bytes
    )
    var memoryCacheSize: Int64 = 32 << 20

    @Option(help: "Comma-separated ImageOptions, e.g. retry-failed,refresh-cached.")
    var options: String?

    @Option(name: .customLong("max-downloads"), help: "Network loads at once.")
    var maxDownloads = 6

    @Option(
        help:
            "How long a request may wait for data, e.g. 15 or 15s (an idle timeout: a slow but steady download goes on).",
        transform: Units.positiveSeconds
    )
    var timeout: Double = 15

    @Option(
        name: .customLong("max-time"),
        help: "How long one download may take in all, e.g. 2m, however steadily its bytes come (default: no limit).",
        transform: Units.positiveSeconds
    )
    var maxTime: Double?

    @Option(
        name: .customLong("decode-timeout"),
        help: "How long one image's decode may take, e.g. 10s (default 10 seconds; over it, a decode failure).",
        transform: Units.positiveSeconds
    )
    var decodeTimeout: Double = 10

    @Option(
        name: .customLong("max-download-size"),
        help: "Largest download accepted, e.g. 20M or 1G (default 128M; 0: no limit).",
        transform: Units.bytes
    )
    var maxDownloadSize: Int64?

    @Option(name: [.customShort("H"), .customLong("header")], help: "A request header, 'Name: value' (repeatable).")
    var headers: [String] = []

    @Option(name: [.customShort("A"), .customLong("user-agent")], help: "The User-Agent header to send.")
    var userAgent: String?

    @Option(
        name: .customLong("connect-timeout"),
        help: "How long a connection may take to open, e.g. 10s (default 10 seconds).",
        transform: Units.positiveSeconds
    )
    var connectTimeout: Double?

    @Option(name: .customLong("cacert"), help: "Trust only the CA certificates in this PEM or DER file (as curl).")
    var caCertificates: String?

    @Option(
        name: .customLong("cert"),
        help: """
            Present this client certificate (PEM, then its intermediates; with its key unless --key \
            is given) to servers that ask for one (as curl).
            """
    )
    var clientCertificate: String?

    @Option(name: .customLong("key"), help: "The private key (PEM, unencrypted) of --cert (as curl).")
    var clientKey: String?

    @Option(
        name: [.customShort("x"), .customLong("proxy")],
        help: """
            Send every request through this HTTP proxy, [http://][user:password@]host[:port] (as curl; \
            otherwise http_proxy, https_proxy, all_proxy and no_proxy are read from the environment).
            """
    )
    var proxy: String?

    @Option(
        name: .customLong("noproxy"),
        help: "Hosts that connect directly, comma-separated (as curl; overrides no_proxy; '*' for all)."
    )
    var noProxy: String?

    @Flag(
        name: [.customShort("s"), .customLong("silent"), .customShort("q"), .customLong("quiet")],
        help: "No progress bar, and in text mode no line for items that succeed (failures are still reported)."
    )
    var quiet = false

    @Flag(name: .customLong("allow-invalid-certs"), help: "Accept untrusted TLS certificates (testing only).")
    var allowInvalidCerts = false

    @Option(name: .customLong("pin-cert"), help: "Pin this DER or PEM certificate (repeatable).")
    var pinnedCertificates: [String] = []

    @Flag(help: "Show a progress bar (items, bytes, rate, time left) on standard error when it is a terminal.")
    var progress = false

    /// The bar is drawn when asked for and not silenced.
    var showsProgress: Bool { progress && !quiet }

    @Flag(help: "Print one JSON object per line on standard output.")
    var json = false

    @OptionGroup var verbosity: Verbosity

    func validate() throws {
        if let options {
            _ = try ImageOptions(parsing: options)
        }
        guard maxDownloads > 0 else { throw ValidationError("--max-downloads must be at least 1, got \(maxDownloads)") }
        for header in headers where Self.parseHeader(header) == nil {
            throw ValidationError(
                "--header '\(header.debugDescription.dropFirst().dropLast())' is not 'Name: value' (one line, a token name)"
            )
        }
        if let userAgent, userAgent.unicodeScalars.contains(where: { $0 == "\r" || $0 == "\n" || $0 == "\0" }) {
            throw ValidationError("-A/--user-agent must be one line")
        }
        if let caCertificates {
            do {
                _ = try SecurityPolicy.certificates(contentsOf: URL(fileURLWithPath: caCertificates))
            } catch {
                throw ValidationError("--cacert \(error)")
            }
        }
        if clientKey != nil, clientCertificate == nil { throw ValidationError("--key needs --cert") }
        do {
            _ = try clientIdentity()
        } catch {
            throw ValidationError("--cert \(error)")
        }
        do {
            _ = try proxyRules()
        } catch {
            throw ValidationError(error.message)
        }
        try Self.validateCacheDirectory(cacheDirectory)
        for path in pinnedCertificates {
            do {
                _ = try SecurityPolicy.certificate(contentsOf: URL(fileURLWithPath: path))
            } catch {
                throw ValidationError("--pin-cert \(error)")
            }
        }
    }

    /// The identity of `--cert` and `--key`, when given.
    func clientIdentity() throws(SecurityPolicyError) -> ClientIdentity? {
        guard let clientCertificate else { return nil }
        return try ClientIdentity.contentsOf(
            certificateFile: URL(fileURLWithPath: clientCertificate),
            keyFile: clientKey.map { URL(fileURLWithPath: $0) }
        )
    }

    /// The one event loop every connection of a run shares. The decodes keep the cores busy;
    /// each wake-up of a network thread takes a core from one of them, and one loop serves the
    /// ready connections of a wake-up together. 1,000 web JPEGs against a loop per core
    /// (Benchmarks/fetch_ab.py): 3 % less CPU decoded (a tenth fewer context switches), 12 %
    /// less bytes only. It lives as long as the process.
    static let networkLoop = MultiThreadedEventLoopGroup(numberOfThreads: 1)

    /// `urls`, then the lines of `--input FILE` (`-`: standard input), blank lines and `#`
    /// comments left out.
    static func inputs(_ urls: [String], listedIn inputFile: String?) throws -> [String] {
        guard let inputFile else { return urls }
        let text: String
        if inputFile == "-" {
            text = String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
        } else {
            guard let data = FileManager.default.contents(atPath: inputFile) else {
                throw ValidationError("--input \(inputFile): cannot read the file")
            }
            text = String(decoding: data, as: UTF8.self)
        }
        // Lines end at LF, CRLF or CR; split on the UTF-8 bytes (a split by Character breaks
        // graphemes, about 2 µs a line).
        let lines = text.utf8.split(whereSeparator: { $0 == UInt8(ascii: "\n") || $0 == UInt8(ascii: "\r") })
        return urls
            + lines.map { Substring($0).trimmingHTTPWhitespace() }.filter { !$0.isEmpty && !$0.hasPrefix("#") }
    }

    /// `--input FILE` must be readable (`-` always is).
    static func validateInputFile(_ inputFile: String?) throws {
        guard let inputFile, inputFile != "-" else { return }
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: inputFile, isDirectory: &isFolder) else {
            throw ValidationError("--input \(inputFile): no such file")
        }
        guard !isFolder.boolValue else { throw ValidationError("--input \(inputFile): a folder, not a list of URLs") }
        guard FileManager.default.isReadableFile(atPath: inputFile) else {
            throw ValidationError("--input \(inputFile): cannot read the file")
        }
    }

    /// The same usage error for every subcommand when `--cache-dir` names something that is not
    /// a folder (a missing folder is created on the first write).
    static func validateCacheDirectory(_ path: String?) throws {
        guard let path else { return }
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue {
            throw ValidationError("--cache-dir \(path): not a folder")
        }
    }

    /// `Name: value` with an RFC 9110 token for a name and no CR, LF or NUL anywhere (they would
    /// split the request); `nil` otherwise.
    static func parseHeader(_ text: String) -> (HTTPField.Name, String)? {
        guard let colon = text.firstIndex(of: ":"),
            !text.unicodeScalars.contains(where: { $0 == "\r" || $0 == "\n" || $0 == "\0" })
        else { return nil }
        let name = text[..<colon].trimmingCharacters(in: .whitespaces)
        let value = text[text.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        let tokenSymbols = Set("!#$%&'*+-.^_`|~".unicodeScalars)
        guard !name.isEmpty,
            name.unicodeScalars.allSatisfy({
                $0.isASCII && (CharacterSet.alphanumerics.contains($0) || tokenSymbols.contains($0))
            }),
            let fieldName = HTTPField.Name(name)
        else { return nil }
        return (fieldName, value)
    }

    var imageOptions: ImageOptions {
        var parsed = (try? ImageOptions(parsing: options ?? "")) ?? []
        if allowInvalidCerts { parsed.insert(.allowInvalidSSLCertificates) }
        return parsed
    }

    var cacheFolder: URL {
        cacheDirectory.map { URL(fileURLWithPath: $0, isDirectory: true) }
            ?? ImageCache.defaultRootDirectory.appendingPathComponent("default", isDirectory: true)
    }

    /// A manager over a cache in the chosen folder and a downloader with these settings.
    /// The proxy per request, as curl chooses it: `--proxy` for every URL, else the environment's
    /// `http_proxy`/`https_proxy`/`all_proxy` (either case); `--noproxy`, else `no_proxy`, lists
    /// the hosts that connect directly.
    func proxyRules(
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(HTTPSessionError) -> HTTPSession.Configuration.ProxyRules? {
        var rules: HTTPSession.Configuration.ProxyRules?
        if let proxy {
            let server = try HTTPSession.Configuration.Proxy(parsing: proxy, source: "--proxy")
            rules = .init(http: server, https: server)
            let noProxy = environment["no_proxy"] ?? environment["NO_PROXY"]
            rules?.bypass = noProxy.map(HTTPSession.Configuration.ProxyRules.parseBypass) ?? []
        } else {
            rules = try .environment(environment)
        }
        if let noProxy { rules?.bypass = HTTPSession.Configuration.ProxyRules.parseBypass(noProxy) }
        return rules
    }

    /// `warnsOfLostDiskWrites`: a failed disk-cache write prints a warning naming the image and
    /// the cause (for commands whose loads do not wait for their writes).
    /// `retryStrategy`: the downloader's (`fetch --retry`).
    func makeManager(
        warnsOfLostDiskWrites: Bool = false,
        retryStrategy: (any ImageRetryStrategy)? = nil
    ) throws -> ImageManager {
        var cacheConfiguration = ImageCache.Configuration()
        cacheConfiguration.usesDiskCache = !noDiskCache
        // One process per run: memory only serves URLs given twice, so a library-sized budget
        // (a quarter of RAM) would only hold every image of the run at once.
        cacheConfiguration.memoryLimits = MemoryCache.Limits(costLimit: Int(clamping: memoryCacheSize))
        cacheConfiguration.cachesImagesInMemory = memoryCacheSize > 0
        cacheConfiguration.cleanupInterval = nil
        cacheConfiguration.logger = Verbosity.logger("cache")
        if warnsOfLostDiskWrites {
            // The warning below says it in words; the log line stays for --verbose.
            if !Verbosity.requested {
                cacheConfiguration.logger = Logger(label: "webimage.cache", factory: { _ in SwiftLogNoOpLogHandler() })
            }
            cacheConfiguration.diskWriteFailureHandler = { key, error in
                Diagnostics.write("\(key): warning: not stored in the disk cache: \(error)")
            }
        }
        let cache = ImageCache(directory: cacheFolder, configuration: cacheConfiguration)

        var sessionConfiguration = HTTPSession.Configuration()
        sessionConfiguration.maximumConnectionsPerHost = maxDownloads
        // --timeout is the longest wait for a byte (connect, head, each body chunk).
        sessionConfiguration.readTimeout = .seconds(timeout)
        sessionConfiguration.connectTimeout =
            connectTimeout.map(Duration.seconds)
            ?? min(sessionConfiguration.connectTimeout, .seconds(timeout))
        sessionConfiguration.cookieStore = .shared
        sessionConfiguration.postsTaskNotifications = false  // the tool observes none
        sessionConfiguration.eventLoopGroup = Self.networkLoop
        if !pinnedCertificates.isEmpty {
            let certificates = try pinnedCertificates.map {
                try SecurityPolicy.certificate(contentsOf: URL(fileURLWithPath: $0))
            }
            sessionConfiguration.securityPolicy = .pinning(certificates: certificates)
        }
        if let caCertificates {
            sessionConfiguration.securityPolicy.trustRoots = try SecurityPolicy.certificates(
                contentsOf: URL(fileURLWithPath: caCertificates)
            )
        }
        sessionConfiguration.securityPolicy.clientIdentity = try clientIdentity()
        sessionConfiguration.proxyRules = try proxyRules()
        var configuration = ImageDownloader.Configuration()
        configuration.logger = Verbosity.logger("downloader")
        configuration.postsNotifications = false  // the tool observes none
        configuration.maxConcurrentDownloads = maxDownloads
        configuration.downloadTimeout = .seconds(timeout)
        configuration.maximumDownloadDuration = maxTime.map { .milliseconds(Int64($0 * 1000)) }
        configuration.retryStrategy = retryStrategy
        if let limit = maxDownloadSize {
            configuration.maximumDownloadSize = limit == 0 ? nil : limit
        }
        for header in headers {
            if let (name, value) = Self.parseHeader(header) { configuration.headers[name] = value }
        }
        if let userAgent { configuration.headers[.userAgent] = userAgent }
        let downloader = ImageDownloader(
            configuration: configuration,
            session: HTTPSession(configuration: sessionConfiguration, logger: Verbosity.logger("http"))
        )
        var managerConfiguration = ImageManager.Configuration()
        managerConfiguration.logger = Verbosity.logger("manager")
        return ImageManager(cache: cache, loader: downloader, configuration: managerConfiguration)
    }
}
