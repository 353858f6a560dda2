import Foundation
import Synchronization
import WebImage
import WebImageCoders
import WebImageHTTP

/// The image proxy's request handling: parse and check the URL, fetch the source through the
/// library (coalesced, with the disk cache for originals), decode within the limits, process,
/// encode, and answer with caching headers.
///
/// Identical concurrent requests share one piece of work (one fetch, one encode); distinct ones
/// take a worker slot each, at most ``ImageProxyConfiguration/workers`` at once with
/// ``ImageProxyConfiguration/queueLimit`` waiting, and a 429 past that. A request whose task is
/// cancelled (its client went away) stops waiting, and the work stops when nobody else waits for
/// it. Thread-safe; decoding, processing and encoding run on the library's bounded work queue,
/// never on the caller's thread pool.
public final class ImageProxy: Sendable {
    public let configuration: ImageProxyConfiguration
    /// What the proxy measures; served on `--metrics-bind`.
    public let metrics: ProxyMetrics
    let manager: ImageManager
    private let gate: AdmissionGate
    private let coalescer = RequestCoalescer<ProxyResponse>()
    let selfTest = CodecSelfTest()
    /// Decodes kept for the next variant of their source; `nil` when the budget is 0.
    let decodedSources: DecodedSourceCache?
    /// The watermark image last used (given as bytes, or fetched from its URL).
    let watermarks: Mutex<WatermarkImage?>

    /// A proxy fetching sources with `manager` (its loader must honour the source rules: use
    /// ``makeManager(configuration:cacheDirectory:cacheSize:)``), measuring into `metrics`.
    public init(configuration: ImageProxyConfiguration, manager: ImageManager, metrics: ProxyMetrics = ProxyMetrics()) {
        self.configuration = configuration
        self.manager = manager
        self.metrics = metrics
        decodedSources = DecodedSourceCache(budget: configuration.decodedSourceCacheSize)
        if case .data(let data) = configuration.watermark {
            watermarks = Mutex(WatermarkImage(data))
        } else {
            watermarks = Mutex(nil)
        }
        let workers = max(1, configuration.workers)
        gate = AdmissionGate(workers: workers, queueLimit: configuration.queueLimit ?? 32 * workers) { load in
            metrics.gate(load)
        }
    }

    /// Requests working and waiting now.
    public var load: AdmissionGate.Load { gate.load }

    /// The server is stopping: requests waiting for a worker, and any that arrive later, are
    /// answered 503 `shuttingDown` with `Retry-After` and `Connection: close` (a load balancer
    /// retries them on another node); working requests go on. ``ImageProxyServer`` calls it
    /// shortly before its grace period runs out.
    public func beginDraining() { gate.drain() }

    /// Whether ``beginDraining()`` was called.
    public var isDraining: Bool { gate.isDraining }

    /// Requests waiting for an answer, shared work counted once per request (for tests).
    var requestsAwaitingAnswers: Int { coalescer.waiting }

    /// Answers one request for `path` (the request target without its query). Cancel the task
    /// when the client goes away.
    /// `ifNoneMatch` and `ifModifiedSince` are the request's validators (304 when the result is
    /// unchanged; `If-Modified-Since` counts only with ``ImageProxyConfiguration/usesLastModified``
    /// and without `If-None-Match`).
    public func respond(
        path: String,
        accept: String? = nil,
        ifNoneMatch: String? = nil,
        ifModifiedSince: String? = nil
    ) async -> ProxyResponse {
        let formats = configuration.negotiatedFormats.forSource(animated: false, encodesAVIF: Self.encodesAVIF)
        let client = ClientHeaders(
            negotiated: OutputFormatChoice.negotiatedFormat(accept, among: formats),
            negotiatedForAnimation: OutputFormatChoice.negotiatedFormat(
                accept,
                among: formats.forSource(animated: true)
            ),
            negotiation: !formats.isEmpty,
            ifNoneMatch: ifNoneMatch,
            ifModifiedSince: ifModifiedSince
        )
        var response: ProxyResponse
        var sourceHost: String?
        do throws(ProxyError) {
            let request = try verifyAndParse(path: path)
            sourceHost = request.source.host
            response = try await answer(request, client: client)
        } catch {
            response = .failure(error)
        }
        response.sourceHost = sourceHost
        metrics.answered(status: response.status)
        if response.status == 200 { metrics.sentResult(bytes: response.body.count) }
        return response
    }

    /// A request that passed every check that needs no I/O.
    struct Request: Sendable {
        var path: ProxyPath
        var source: URL
        var options: ProcessingOptions
        var requestedFormat: ImageFormat?
        /// `format:best` (``BestFormatSettings``).
        var bestFormat = false
    }

    /// Checks the URL's signature, then parses it and checks its options, format and source
    /// (no I/O).
    private func verifyAndParse(path: String) throws(ProxyError) -> Request {
        // The signature first, before any parsing: anything unsigned is 403 and echoes nothing.
        let signed = ProxyPath.signedParts(of: path)
        if let signer = configuration.signer {
            guard let signed, signer.verify(signature: String(signed.signature), path: String(signed.signedPath))
            else { throw .badSignature("the signature does not match the URL (or no key signed it)") }
        }
        let request = try ProxyPath(parsing: path, signedParts: signed)
        let options = try ProcessingOptions(
            request.options,
            presets: configuration.presets,
            onlyPresets: configuration.onlyPresets,
            base: configuration.defaultOptions
        )
        var requested = options.format
        var best = options.bestFormat
        if request.outputExtension?.lowercased() == "best" {
            (requested, best) = (nil, true)
        } else if let name = request.outputExtension {
            guard let format = ProcessingOptions.format(named: name) else {
                throw .badURL("'.\(name)' is not a format (png, jpeg, webp, avif, gif, bmp, ico, tiff)")
            }
            guard ProcessingOptions.outputFormats.contains(format) else {
                throw .badURL("'.\(name)' cannot be written (png, jpeg, webp, avif, gif, bmp, ico, tiff)")
            }
            (requested, best) = (format, false)  // the extension wins over `format`, as in imgproxy
        }
        if requested == nil, !best, configuration.bestFormat.byDefault { best = true }
        if options.watermark != nil, configuration.watermark == nil {
            throw .badOption(
                "watermark: the server has no watermark image (--watermark-path, --watermark-url or --watermark-data)"
            )
        }
        let url = try checkedSource(request.source)
        return Request(path: request, source: url, options: options, requestedFormat: requested, bestFormat: best)
    }

    /// The source URL, checked: a scheme of the proxy's own sources (`local://`, `s3://`) when
    /// the manager has its loader, any other by the source rules (http(s) only).
    private func checkedSource(_ source: String) throws(ProxyError) -> URL {
        let scheme = source.prefix { $0 != ":" }.lowercased()
        guard let refusal = ProxySourceLoader.refusalsWhenOff[scheme] else {
            return try configuration.sourcePolicy.check(source)
        }
        guard let url = URL(string: source) else { throw .badURL("the source '\(source.prefix(200))' is not a URL") }
        guard manager.loader(for: url) != nil else { throw .sourceNotAllowed(refusal) }
        return url
    }

    /// What the request's headers ask, read once: the format negotiation picks from `Accept`,
    /// and the validators.
    struct ClientHeaders: Sendable {
        /// JPEG XL, AVIF or WebP when negotiation is on for it and `Accept` lists it; else `nil`.
        var negotiated: ImageFormat?
        /// The same without JPEG XL, which imgproxy never negotiates for an animation.
        var negotiatedForAnimation: ImageFormat?
        /// ``ImageProxyConfiguration/negotiatedFormats`` is not empty: `Accept` matters.
        var negotiation: Bool
        var ifNoneMatch: String?
        var ifModifiedSince: String?

        /// Which of the answers negotiation can give this request gets
        /// (``OutputFormatChoice/acceptBucket(_:negotiation:)``).
        var acceptBucket: String { negotiation ? negotiated?.rawValue ?? "other" : "" }
    }

    /// Joins identical work in flight, or starts it in a worker slot.
    private func answer(_ request: Request, client: ClientHeaders) async throws(ProxyError) -> ProxyResponse {
        // Requests with the same key get the same answer: the signed path, the Accept bucket
        // negotiation picks, and the validator the client holds.
        let key = [
            request.path.isInfo ? "info" : "", request.path.signedPath, client.acceptBucket, client.ifNoneMatch ?? "",
            client.ifModifiedSince ?? "",
        ]
        .joined(separator: "\n")
        let queued = ContinuousClock.now
        let result: (value: ProxyResponse, joined: Bool)
        do {
            result = try await coalescer.value(for: key) { [self] in
                do throws(AdmissionGate.Refusal) {
                    return try await gate.run { () async -> ProxyResponse in
                        metrics.record(.queue, ContinuousClock.now - queued)
                        do throws(ProxyError) {
                            return try await work(request, client: client)
                        } catch {
                            return .failure(error)
                        }
                    }
                } catch .queueFull {
                    return .failure(
                        ProxyError(.busy, "every worker is busy and the queue is full")
                    )
                } catch .draining {
                    return .failure(.shuttingDown)
                } catch {
                    return .failure(.cancelled)
                }
            }
        } catch {
            throw .cancelled
        }
        if result.joined { metrics.joinedOtherWork() }
        return result.value
    }

    /// The request's steps after verify and parse, each once and in order: fetch → negotiate
    /// (format, quality, ETag, 304) → plan → render → respond. `/info` and sources sent as
    /// they are leave after the fetch.
    private func work(_ request: Request, client: ClientHeaders) async throws(ProxyError) -> ProxyResponse {
        let fetched = try await fetchWithinLimits(request.source)
        if request.path.isInfo { return try await info(fetched.data, header: fetched.header) }
        if Self.sendsSourceAsIs(
            request,
            sourceFormat: fetched.header.format,
            allowsBestSkips: configuration.bestFormat.allowsSkips
        ) {
            return sourceAsIs(fetched, request: request, client: client)
        }
        let negotiated = try await negotiate(request, source: fetched, client: client)
        if isUnchanged(client, etag: negotiated.etag, lastModified: fetched.lastModified) {
            return ProxyResponse(status: 304, headers: negotiated.headers, body: Data())
        }
        let plan = try plan(negotiated.render, header: fetched.header)
        let rendered = try await render(
            fetched.data,
            plan: plan,
            source: (request.source, negotiated.sourceFingerprint)
        )
        return respond(with: rendered, for: request, source: fetched, headers: negotiated.headers)
    }

    /// The source, timed, and checked against the resolution limits before anything decodes it:
    /// its pixels with every frame counted, or each frame's when
    /// ``ProxyLimits/maxAnimationFrameResolution`` is set and the source is animated.
    private func fetchWithinLimits(_ url: URL) async throws(ProxyError) -> FetchedSource {
        let fetchStarted = ContinuousClock.now
        let fetched = try await source(url)
        metrics.record(.fetch, ContinuousClock.now - fetchStarted)
        if let refusal = configuration.limits.resolutionRefusal(of: fetched.header) {
            throw ProxyError(.limitExceeded, refusal)
        }
        return fetched
    }

    /// What a render is asked for and what its response says before it exists: the output
    /// format, quality and watermark, the result's entity tag, and its caching headers.
    struct Negotiated: Sendable {
        var render: RenderRequest
        var sourceFingerprint: String
        var etag: String
        /// Caching headers, `ETag`, `Last-Modified` and `Vary`: a 304's headers too.
        var headers: [(name: String, value: String)]
    }

    /// The output format (the URL's, negotiation's or the source's), or `best`'s candidates (then
    /// the format is `.unknown` until the render picks): an animation takes the negotiated
    /// format that animates, else GIF.
    private func formatChoice(
        _ request: Request,
        source fetched: FetchedSource,
        client: ClientHeaders
    ) -> (OutputFormatChoice, [ImageFormat]?) {
        let animated = fetched.header.frameCount > 1
        if request.bestFormat {
            if animated {
                let format = client.negotiatedForAnimation.flatMap { [.webp, .avif].contains($0) ? $0 : nil } ?? .gif
                return (OutputFormatChoice(format: format, variesWithAccept: client.negotiation), nil)
            }
            let candidates = configuration.bestFormat.candidates(negotiated: client.negotiated)
            return (OutputFormatChoice(format: .unknown, variesWithAccept: client.negotiation), candidates)
        }
        let negotiated = animated ? client.negotiatedForAnimation : client.negotiated
        if let requested = request.requestedFormat, !configuration.enforcedFormats.isEmpty {
            // An enforced format the client accepts replaces the URL's (imgproxy's ENFORCE_*).
            let member = negotiated.flatMap(OutputFormatChoice.NegotiatedFormats.member)
            let enforced = member.map { configuration.enforcedFormats.contains($0) } ?? false
            return (
                OutputFormatChoice(format: enforced ? negotiated ?? requested : requested, variesWithAccept: true), nil
            )
        }
        let choice = OutputFormatChoice(
            requested: request.requestedFormat,
            source: fetched.header.format,
            hasAlpha: nil,  // a source we cannot write gets PNG or JPEG once decoding tells
            negotiated: negotiated,
            negotiation: client.negotiation
        )
        return (choice, nil)
    }

    /// Picks the format (the URL's, negotiation's or the source's) and its quality, and names
    /// the result (its ETag) from the options, the source's bytes and the watermark.
    private func negotiate(
        _ request: Request,
        source fetched: FetchedSource,
        client: ClientHeaders
    ) async throws(ProxyError) -> Negotiated {
        let (choice, bestCandidates) = formatChoice(request, source: fetched, client: client)
        let quality =
            request.options.quality ?? request.options.formatQuality[choice.format]
            ?? configuration.formatQuality[choice.format] ?? configuration.defaultQuality
        // A format decided after decoding (PNG or JPEG) gets JPEG's search; PNG writes none.
        let autoQuality = try configuration.autoQuality.resolved(
            request.options.autoQuality,
            urlQuality: request.options.quality,
            format: choice.format == .unknown ? .jpeg : choice.format
        )
        let watermark = request.options.watermark == nil ? nil : try await watermarkImage()
        let sourceFingerprint = Self.fingerprint(fetched.data)
        let etag = ResultETag.make(
            options: request.options,
            format: choice.format,
            quality: quality,
            sourceFingerprint: sourceFingerprint + (watermark.map { "+" + $0.fingerprint } ?? ""),
            encoderVersion: Self.encoderVersion + ";" + configuration.encoders.fingerprint + ";"
                + configuration.autoQuality.fingerprint
                + (bestCandidates.map { ";best:" + $0.map(\.rawValue).joined(separator: ",") } ?? "")
        )
        let lifetime = fetched.fellBack ? configuration.fallbackImageTTL ?? configuration.ttl : configuration.ttl
        var headers =
            cachingHeaders(lifetime: lifetime, expires: request.options.expires) + [("ETag", etag)]
            + lastModifiedHeader(fetched)
        if choice.variesWithAccept { headers.append(("Vary", "Accept")) }
        if configuration.setsCanonicalHeader, ["http", "https"].contains(request.source.scheme?.lowercased()) {
            headers.append(("Link", "<\(request.source.absoluteString)>; rel=\"canonical\""))
        }
        return Negotiated(
            render: RenderRequest(
                options: request.options,
                choice: choice,
                quality: quality,
                watermark: watermark,
                autoQuality: autoQuality,
                bestCandidates: bestCandidates
            ),
            sourceFingerprint: sourceFingerprint,
            etag: etag,
            headers: headers
        )
    }

    /// The rendered result's response: its type first, the negotiated headers, its
    /// `Content-Disposition`; the fallback image's status when it stood in for the source.
    private func respond(
        with rendered: Rendered,
        for request: Request,
        source fetched: FetchedSource,
        headers negotiated: [(name: String, value: String)]
    ) -> ProxyResponse {
        metrics.record(.decode, rendered.timings.decode)
        metrics.record(.transform, rendered.timings.transform)
        metrics.record(.encode, rendered.timings.encode)
        let disposition = ContentDisposition.value(
            name: request.options.filename,
            source: request.source,
            format: rendered.format,
            attachment: request.options.returnAttachment
        )
        return ProxyResponse(
            status: fetched.fallbackCause.map {
                configuration.fallbackImageStatus == 0 ? $0.status : configuration.fallbackImageStatus
            } ?? 200,
            headers: [("Content-Type", rendered.format.mimeType)] + negotiated + [("Content-Disposition", disposition)],
            body: rendered.data
        )
    }

    /// `Last-Modified: <the source's>` with ``ImageProxyConfiguration/usesLastModified``.
    private func lastModifiedHeader(_ source: FetchedSource) -> [(name: String, value: String)] {
        guard configuration.usesLastModified, let date = source.lastModified else { return [] }
        return [("Last-Modified", date)]
    }

    /// Whether the client's copy is current: its `If-None-Match` matches, or (without one, with
    /// ``ImageProxyConfiguration/usesLastModified``) the source is not newer than its
    /// `If-Modified-Since`.
    private func isUnchanged(_ client: ClientHeaders, etag: String, lastModified: String?) -> Bool {
        if let ifNoneMatch = client.ifNoneMatch { return ResultETag.matches(ifNoneMatch: ifNoneMatch, etag: etag) }
        guard configuration.usesLastModified, let since = client.ifModifiedSince.flatMap(HTTPDate.parse),
            let modified = lastModified.flatMap(HTTPDate.parse)
        else { return false }
        return modified <= since
    }

    /// `Cache-Control` for `lifetime` seconds (shortened to the URL's `expires`), and `Expires`
    /// at the same moment.
    func cachingHeaders(lifetime: Int, expires: Int?) -> [(name: String, value: String)] {
        let now = Date()
        var seconds = lifetime
        if let expires, expires > 0 { seconds = max(0, min(seconds, expires - Int(now.timeIntervalSince1970))) }
        return [
            ("Cache-Control", "public, max-age=\(seconds)"),
            ("Expires", HTTPDate.string(from: now.addingTimeInterval(TimeInterval(seconds)))),
        ]
    }

    /// `raw`, or `skip_processing` naming the source's format with no other output format asked.
    /// A `best` request skips only with `allowsBestSkips` (``BestFormatSettings/allowsSkips``).
    static func sendsSourceAsIs(_ request: Request, sourceFormat: ImageFormat, allowsBestSkips: Bool) -> Bool {
        request.options.raw
            || (request.options.skipProcessing.contains(sourceFormat)
                && (request.requestedFormat == nil || request.requestedFormat == sourceFormat)
                && (!request.bestFormat || allowsBestSkips))
    }

    /// The source's bytes as the result: its format's type, an entity tag of the bytes.
    private func sourceAsIs(_ source: FetchedSource, request: Request, client: ClientHeaders) -> ProxyResponse {
        let (data, format) = (source.data, source.header.format)
        let etag = "\"" + Self.fingerprint(data) + "\""
        var headers: [(name: String, value: String)] =
            [("Content-Type", format == .unknown ? "application/octet-stream" : format.mimeType)]
            + cachingHeaders(lifetime: configuration.ttl, expires: request.options.expires) + [("ETag", etag)]
            + lastModifiedHeader(source)
        if isUnchanged(client, etag: etag, lastModified: source.lastModified) {
            return ProxyResponse(status: 304, headers: Array(headers.dropFirst()), body: Data())
        }
        headers.append(
            (
                "Content-Disposition",
                ContentDisposition.value(
                    name: request.options.filename,
                    source: request.source,
                    format: format,
                    attachment: request.options.returnAttachment
                )
            )
        )
        return ProxyResponse(status: 200, headers: headers, body: data)
    }

    static let encodesAVIF = ImageCodersManager.shared.encoder(for: .avif) != nil

    /// The codec libraries and their versions: a new encoder gives new entity tags.
    static let encoderVersion = CodecLibrary.all.map { "\($0.name) \($0.version)" }.joined(separator: ",")

    /// A stable name for the source's bytes: their XXH64 (the disk cache's checksum) and length,
    /// in hex. An entity tag's input, not a security boundary; XXH64 reads a 500 KB source in
    /// about 0.05 ms where SHA-256 took 0.28 ms of every cold request.
    static func fingerprint(_ data: Data) -> String {
        let hash = data.withUnsafeBytes { DiskCacheEntryFormat.checksum($0) }
        return String(hash, radix: 16) + "-" + String(data.count, radix: 16)
    }
}
