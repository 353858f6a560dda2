import Crypto
import Foundation
import WebImage
import WebImageCoders
import WebImageHTTP

/// What the image proxy allows and how it answers.
public struct ImageProxyConfiguration: Sendable {
    /// Checks signatures; `nil` only under `--insecure` (any signature segment passes).
    public var signer: URLSigner?
    /// Named option lists (`--preset NAME=OPTIONS`); `default` applies to every request.
    public var presets: [String: [ProxyOption]] = [:]
    /// Refuse every option that is not a preset.
    public var onlyPresets = false
    public var sourcePolicy = SourcePolicy()
    /// `Cache-Control: public, max-age` of results, seconds. Default one year.
    public var ttl = 31_536_000
    /// The largest source in bytes (by `Content-Length`, then while streaming). Default 32 MiB.
    public var maxSourceFileSize: Int64 = 33_554_432
    /// The most source pixels, in megapixels, animation frames summed. Default 50.
    public var maxSourceResolution: Double = 50
    /// The longest side a result may have. Default 8192.
    public var maxResultDimension = 8192
    /// The most frames an animated result keeps. Default 256.
    public var maxAnimationFrames = 256
    /// Seconds allowed for fetching a source. Default 5.
    public var downloadTimeout: TimeInterval = 5
    /// Seconds allowed for decoding, processing and encoding. Default 10.
    public var processingTimeout: TimeInterval = 10
    /// Pick AVIF or WebP from `Accept` when the URL names no format (and send `Vary: Accept`).
    public var formatNegotiation = false
    /// The quality when the URL sets none, 1–100. Default 80.
    public var defaultQuality = 80

    /// A configuration checking signatures with `signer` (`nil`: insecure).
    public init(signer: URLSigner?) { self.signer = signer }
}

/// One answer of the proxy, independent of the HTTP server carrying it.
public struct ProxyResponse: Sendable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: Data

    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// An error as JSON, `{"error":{"code","message"}}`, never cached for long.
    static func failure(_ error: ProxyError) -> ProxyResponse {
        let object: [String: Any] = ["error": ["code": error.code, "message": error.message]]
        let body = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return ProxyResponse(
            status: error.status,
            headers: [("Content-Type", "application/json"), ("Cache-Control", "no-cache")],
            body: body
        )
    }
}

/// The image proxy's request handling: parse and check the URL, fetch the source through the
/// library (coalesced, with the disk cache for originals), decode within the limits, process,
/// encode, and answer with caching headers. Thread-safe; decoding, processing and encoding run
/// on the library's bounded work queues, never on the caller's thread pool.
public final class ImageProxy: Sendable {
    public let configuration: ImageProxyConfiguration
    private let manager: ImageManager

    /// A proxy fetching sources with `manager` (its loader must honour the source rules: use
    /// ``makeManager(configuration:cacheDirectory:)``).
    public init(configuration: ImageProxyConfiguration, manager: ImageManager) {
        self.configuration = configuration
        self.manager = manager
    }

    /// A manager for `configuration`: originals kept on disk in `cacheDirectory` (memory holds
    /// no decoded sources: results are cached in front of the proxy), at most 5 redirects each
    /// checked against the source rules, the download timeout and size limit, no cookies.
    public static func makeManager(configuration: ImageProxyConfiguration, cacheDirectory: URL) -> ImageManager {
        var cacheConfiguration = ImageCache.Configuration()
        cacheConfiguration.cachesImagesInMemory = false
        let cache = ImageCache(directory: cacheDirectory, configuration: cacheConfiguration)
        var session = HTTPSession.Configuration()
        session.redirectPolicy = .init(maximumCount: 5)
        let policy = configuration.sourcePolicy
        session.redirectValidator = { target in
            do throws(ProxyError) {
                try policy.check(target.absoluteString)
                return nil
            } catch {
                return error.message
            }
        }
        // DNS rebinding: a name is judged again by the address its connection reached, before
        // a request is written on it; the connection is closed when that address is refused.
        session.connectionValidator = { address in policy.refusal(connectingTo: address) }
        session.cookieStore = nil
        session.connectTimeout = configuration.downloadTimeout
        session.readTimeout = configuration.downloadTimeout
        var downloader = ImageDownloader.Configuration()
        downloader.downloadTimeout = configuration.downloadTimeout
        downloader.maximumDownloadDuration = configuration.downloadTimeout
        downloader.maximumDownloadSize = configuration.maxSourceFileSize
        downloader.decodesImages = false
        let loader = ImageDownloader(configuration: downloader, session: HTTPSession(configuration: session))
        return ImageManager(cache: cache, loader: loader)
    }

    /// Answers one request for `path` (the request target without its query).
    public func respond(path: String, accept: String? = nil, ifNoneMatch: String? = nil) async -> ProxyResponse {
        do throws(ProxyError) {
            return try await process(path: path, accept: accept, ifNoneMatch: ifNoneMatch)
        } catch {
            return .failure(error)
        }
    }

    private func process(path: String, accept: String?, ifNoneMatch: String?) async throws(ProxyError) -> ProxyResponse
    {
        let request = try ProxyPath(parsing: path)
        if let signer = configuration.signer, !signer.verify(signature: request.signature, path: request.signedPath) {
            throw .badSignature("the signature does not match the URL (or no key signed it)")
        }
        let options = try ProcessingOptions(
            request.options,
            presets: configuration.presets,
            onlyPresets: configuration.onlyPresets
        )
        var requested = options.format
        if let name = request.outputExtension {
            guard let format = ProcessingOptions.format(named: name) else {
                throw .badURL("'.\(name)' is not a format (png, jpeg, webp, avif, gif)")
            }
            guard ProcessingOptions.outputFormats.contains(format) else {
                throw .badURL("'.\(name)' cannot be written (png, jpeg, webp, avif, gif)")
            }
            requested = requested ?? format
        }
        let url = try configuration.sourcePolicy.check(request.source)
        let data = try await fetch(url)
        guard let header = ImageHeader(data) else {
            throw ProxyError(status: 422, code: "notAnImage", message: "the source is not an image we can read")
        }
        let pixels = Double(header.size.width) * Double(header.size.height) * Double(max(1, header.frameCount))
        guard pixels <= configuration.maxSourceResolution * 1_000_000 else {
            throw ProxyError(
                status: 422,
                code: "limitExceeded",
                message:
                    "the source has \(String(format: "%.1f", pixels / 1_000_000)) megapixels, over the limit of \(configuration.maxSourceResolution)"
            )
        }
        if request.isInfo { return try await info(data, header: header) }
        let choice = OutputFormatChoice(
            requested: requested,
            source: header.format,
            hasAlpha: nil,  // a source we cannot write gets PNG or JPEG once decoding tells
            accept: accept,
            negotiation: configuration.formatNegotiation,
            encodesAVIF: ImageCodersManager.shared.encoder(for: .avif) != nil
        )
        let quality = options.quality ?? configuration.defaultQuality
        let etag = ResultETag.make(
            options: options,
            format: choice.format,
            quality: quality,
            sourceFingerprint: Self.fingerprint(data),
            encoderVersion: Self.encoderVersion
        )
        var headers: [(name: String, value: String)] = [
            ("Cache-Control", "public, max-age=\(configuration.ttl)"), ("ETag", etag),
        ]
        if choice.variesWithAccept { headers.append(("Vary", "Accept")) }
        if let ifNoneMatch, ResultETag.matches(ifNoneMatch: ifNoneMatch, etag: etag) {
            return ProxyResponse(status: 304, headers: headers, body: Data())
        }
        let (body, format) = try await render(data, options: options, choice: choice, quality: quality)
        headers.insert(("Content-Type", format.mimeType), at: 0)
        return ProxyResponse(status: 200, headers: headers, body: body)
    }

    /// The source's bytes, from the disk cache or the network.
    private func fetch(_ url: URL) async throws(ProxyError) -> Data {
        let result: ImageLoadResult
        do {
            result = try await manager.loadImage(with: url, options: [.avoidDecodeImage, .retryFailed])
        } catch {
            throw Self.proxyError(error)
        }
        guard let data = result.data, !data.isEmpty else {
            throw ProxyError(status: 422, code: "notAnImage", message: "the source sent no bytes")
        }
        return data
    }

    static func proxyError(_ error: WebImageError) -> ProxyError {
        let http = error.underlying?.code
        if error.code == .invalidDownloadStatusCode, let status = error.statusCode, status == 404 || status == 410 {
            return ProxyError(status: 404, code: "sourceNotFound", message: "the source answered \(status)")
        }
        if http == .timedOut {
            return ProxyError(status: 504, code: "timedOut", message: "the source did not answer in time")
        }
        if http == .connectionNotAllowed, let message = error.underlying?.message {
            return .sourceNotAllowed(message)
        }
        if http == .redirectRefused, let message = error.underlying?.message {
            return .sourceNotAllowed("a redirect was refused: \(message)")
        }
        switch error.code {
        case .downloadTooLarge:
            return ProxyError(status: 422, code: "limitExceeded", message: "the source is over --max-src-file-size")
        case .badImageData, .invalidDownloadContentType:
            return ProxyError(status: 422, code: "notAnImage", message: "the source is not an image")
        case .invalidDownloadStatusCode:
            return ProxyError(
                status: 502,
                code: "sourceFailed",
                message: "the source answered \(error.statusCode.map(String.init) ?? "an error")"
            )
        default:
            return ProxyError(status: 502, code: "sourceFailed", message: "the source failed: \(error.message)")
        }
    }

    /// Runs `body` on the library's decode queue (bounded, off the caller's thread pool).
    private static func onDecodeQueue<Value: Sendable>(
        _ body: @escaping @Sendable () throws(ProxyError) -> Value
    ) async throws(ProxyError) -> Value {
        let result: Result<Value, ProxyError> = await withCheckedContinuation { continuation in
            ImageWorkQueue.decoding.enqueue {
                continuation.resume(returning: Result { () throws(ProxyError) in try body() })
            }
        }
        return try result.get()
    }

    /// Decodes, processes and encodes on the library's work queue.
    private func render(
        _ data: Data,
        options: ProcessingOptions,
        choice: OutputFormatChoice,
        quality: Int
    ) async throws(ProxyError) -> (Data, ImageFormat) {
        let configuration = configuration
        return try await Self.onDecodeQueue { () throws(ProxyError) in
            try Self.render(data, options: options, choice: choice, quality: quality, configuration: configuration)
        }
    }

    private static func render(
        _ data: Data,
        options: ProcessingOptions,
        choice: OutputFormatChoice,
        quality: Int,
        configuration: ImageProxyConfiguration
    ) throws(ProxyError) -> (Data, ImageFormat) {
        let animatable: Set<ImageFormat> = [.gif, .webp, .png, .avif]
        var decoding = ImageDecodingOptions(
            firstFrameOnly: !animatable.contains(choice.format),
            maxPixelCount: Int(configuration.maxSourceResolution * 1_000_000),
            maxFrameCount: configuration.maxAnimationFrames
        )
        decoding.maxDecodeDuration = .milliseconds(Int64(configuration.processingTimeout * 1000))
        let image: DecodedImage
        do {
            image = try ImageCodersManager.shared.decode(data, options: decoding)
        } catch {
            let code = error.code == "limitExceeded" ? "limitExceeded" : "notAnImage"
            throw ProxyError(status: 422, code: code, message: "the source cannot be decoded: \(error)")
        }
        let geometry = ResizeGeometry(
            source: PixelSize(width: image.bitmap.width, height: image.bitmap.height),
            orientation: image.orientation,
            options: options
        )
        guard max(geometry.output.width, geometry.output.height) <= configuration.maxResultDimension else {
            throw ProxyError(
                status: 422,
                code: "limitExceeded",
                message:
                    "the result would be \(geometry.output.width)×\(geometry.output.height), over --max-result-dimension \(configuration.maxResultDimension)"
            )
        }
        var processed = ImageProcessor.process(image, options: options)
        // A source we cannot write: PNG when the result has alpha, else JPEG.
        let format = choice.format == .unknown ? (processed.hasAlpha ? .png : .jpeg) : choice.format
        if let background = options.background {
            processed.frames = processed.frames.map {
                DecodedImage.Frame(bitmap: $0.bitmap.flattened(onto: background), duration: $0.duration)
            }
        }
        do {
            let encoded = try ImageCodersManager.shared.encode(
                processed,
                as: format,
                options: ImageEncodingOptions(quality: Double(quality) / 100)
            )
            return (encoded, format)
        } catch {
            throw ProxyError(status: 422, code: "notAnImage", message: "the result cannot be encoded: \(error)")
        }
    }

    /// `/info`: the source's facts as JSON.
    private func info(_ data: Data, header: ImageHeader) async throws(ProxyError) -> ProxyResponse {
        let configuration = configuration
        let body = try await Self.onDecodeQueue { () throws(ProxyError) in
            try Self.describe(data, header: header, configuration: configuration)
        }
        return ProxyResponse(
            status: 200,
            headers: [("Content-Type", "application/json"), ("Cache-Control", "public, max-age=\(configuration.ttl)")],
            body: body
        )
    }

    private static func describe(
        _ data: Data,
        header: ImageHeader,
        configuration: ImageProxyConfiguration
    )
        throws(ProxyError) -> Data
    {
        let image: DecodedImage
        do {
            image = try ImageCodersManager.shared.decode(
                data,
                options: ImageDecodingOptions(maxPixelCount: Int(configuration.maxSourceResolution * 1_000_000))
            )
        } catch {
            throw ProxyError(status: 422, code: "notAnImage", message: "the source cannot be decoded: \(error)")
        }
        let object: [String: Any] = [
            "width": header.size.width, "height": header.size.height, "format": header.format.rawValue,
            "frames": max(header.frameCount, image.frames.count), "animated": image.frames.count > 1,
            "orientation": image.orientation.rawValue, "hasAlpha": image.hasAlpha, "bytes": data.count,
            "dominantColor": ImageSummary.dominantColor(of: image.bitmap),
            "blurhash": ImageSummary.blurhash(of: image.bitmap),
        ]
        return (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
    }

    /// The codec libraries and their versions: a new encoder gives new entity tags.
    static let encoderVersion = CodecLibrary.all.map { "\($0.name) \($0.version)" }.joined(separator: ",")

    /// A stable name for the source's bytes: the first 16 bytes of their SHA-256, in hex.
    static func fingerprint(_ data: Data) -> String {
        SHA256.hash(data: data).prefix(16).map { String(format: "%02x", $0) }.joined()
    }
}
