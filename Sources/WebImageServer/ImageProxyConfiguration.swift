import Foundation
import WebImage
import WebImageCoders

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
    /// What one request may cost: source and result sizes, frames, time and redirects
    /// (``ProxyLimits``; imgproxy's defaults).
    public var limits = ProxyLimits()
    /// Memory for what a render allocates (the decoded source, the result's frames, the
    /// transient canvases and the encoder's buffers), reserved before it starts; a render that
    /// alone needs more than the whole budget is refused with 422. Default: the process's
    /// `DecodingMemoryBudget.shared`, shared with the library's decodes.
    public var memoryBudget: DecodingMemoryBudget = .shared
    /// Pick AVIF or WebP from `Accept` when the URL names no format (and send `Vary: Accept`).
    public var formatNegotiation = false
    /// The quality when the URL sets none, 1–100. Default 80.
    public var defaultQuality = 80
    /// Options every request starts from (imgproxy's `IMGPROXY_STRIP_METADATA`,
    /// `IMGPROXY_KEEP_COPYRIGHT`, `IMGPROXY_STRIP_COLOR_PROFILE`): metadata stripped but the
    /// copyright, colour converted to sRGB.
    public var defaultOptions = ProcessingOptions()
    /// Requests working at once (fetch, decode, transform and encode all count). Default: the
    /// number of cores.
    public var workers = ProcessInfo.processInfo.activeProcessorCount
    /// Requests waiting for a worker beyond those; past it the answer is 429 with
    /// `Retry-After`, as imgproxy's. `nil` (default): 32 × ``workers``; `Int.max`: no limit
    /// (imgproxy's `IMGPROXY_REQUESTS_QUEUE_SIZE=0`, which `webimage serve --queue 0` sets).
    public var queueLimit: Int?
    /// Bytes of decoded sources kept in memory for the next size of the same source (a cluster
    /// sends every size of one source to one node). 0 turns the cache off. Default 256 MiB, or an
    /// eighth of the memory this process may use when that is less.
    public var decodedSourceCacheSize = Int(min(256 << 20, SystemMemory.current.limit / 8))
    /// How the HTTP server holds client connections: the request read deadline, the keep-alive
    /// timeout and the connection cap (``ConnectionLimits``' defaults: 10 s, 10 s, derived from
    /// the descriptor limit).
    public var connectionLimits = ConnectionLimits()
    /// How often ``ImageProxyServer`` hands freed heap memory back to the kernel while requests
    /// come in (imgproxy's `IMGPROXY_FREE_MEMORY_INTERVAL`; `SystemMemory.releaseFreeMemory()`
    /// on a thread of its own): after a burst of large images the process's resident memory
    /// falls back towards what it uses. `nil` (default): never, as the setting is process-wide;
    /// `webimage serve` sets 10 s.
    public var freeMemoryInterval: Duration?
    /// The image `watermark` lays over results (imgproxy's `IMGPROXY_WATERMARK_DATA`, `_PATH`
    /// or `_URL`); `nil` (default): `watermark` is refused with 400.
    public var watermark: ConfiguredImage?
    /// Multiplies every request's watermark opacity (`IMGPROXY_WATERMARK_OPACITY`). Default 1.
    public var watermarkOpacity: Double = 1
    /// Rendered in place of a source that cannot be fetched or read (imgproxy's
    /// `IMGPROXY_FALLBACK_IMAGE_*`), with the request's options; `nil` (default): the error.
    public var fallbackImage: ConfiguredImage?
    /// The status of an answer made from ``fallbackImage``; 0: the status the source's failure
    /// would have had (404 for a missing source, 502, 504, 422, …), as imgproxy's. Default 200.
    public var fallbackImageStatus = 200
    /// `Cache-Control: max-age` of an answer made from ``fallbackImage``; `nil`: ``ttl``.
    public var fallbackImageTTL: Int?
    /// Header fields sent with every source request (a `User-Agent` among them replaces ours).
    public var sourceHeaders: [(name: String, value: String)] = []
    /// `Access-Control-Allow-Origin` on every answer, and `OPTIONS` answered for preflights
    /// (`IMGPROXY_ALLOW_ORIGIN`); `nil` (default): no CORS headers, `OPTIONS` is 405.
    public var allowOrigin: String?
    /// The path every proxy URL begins with (`IMGPROXY_PATH_PREFIX`, such as `/img`); other
    /// paths are 404 but `/health`. Default: none.
    public var pathPrefix = ""
    /// `local:///path` sources read from this folder (`IMGPROXY_LOCAL_FILESYSTEM_ROOT`); `nil`
    /// (default): `local://` sources are refused.
    public var localRoot: LocalSourceRoot?
    /// `s3://bucket/key` sources fetched with these credentials (`IMGPROXY_USE_S3`); `nil`
    /// (default): `s3://` sources are refused.
    public var s3: S3Configuration?
    /// Results carry their source's `Last-Modified`, and `If-Modified-Since` is answered 304
    /// when the source is not newer (`IMGPROXY_USE_LAST_MODIFIED`). Default off: it makes each
    /// fetch wait for its disk-cache write, where the date is kept.
    public var usesLastModified = false
    /// Results of `http(s)` sources carry `Link: <source URL>; rel="canonical"`
    /// (`IMGPROXY_SET_CANONICAL_HEADER`), so search engines credit the original. Default off.
    public var setsCanonicalHeader = false
    /// JPEG results progressive (`IMGPROXY_JPEG_PROGRESSIVE`). Default off.
    public var jpegProgressive = false
    /// PNG results Adam7-interlaced (`IMGPROXY_PNG_INTERLACED`). Default off.
    public var pngInterlaced = false
    /// The quality per output format when the URL gives none (`IMGPROXY_FORMAT_QUALITY`);
    /// formats not listed use ``defaultQuality``. Default imgproxy's: WebP 79, AVIF 63,
    /// JPEG XL 77 (the numbers mean different things per codec).
    public var formatQuality: [ImageFormat: Int] = [.webp: 79, .avif: 63, .jxl: 77]
    /// The quality chosen per image (``AutoQualitySettings``; imgproxy Pro's
    /// `IMGPROXY_AUTOQUALITY_*`). Default off.
    public var autoQuality = AutoQualitySettings()
    /// `format:best` (``BestFormatSettings``; imgproxy Pro's `IMGPROXY_PREFERRED_FORMATS` and
    /// `IMGPROXY_BEST_FORMAT_*`).
    public var bestFormat = BestFormatSettings()
    /// The encoders' speed and effort (``ProxyEncoders``; imgproxy's defaults).
    public var encoders = ProxyEncoders()
    /// JPEG XL, first, for still images whose client's `Accept` lists `image/jxl`, when the URL
    /// names no format (`IMGPROXY_AUTO_JXL`; `Vary: Accept`). Default off, as imgproxy's.
    public var negotiatesJXL = false
    /// WebP alone, as ``formatNegotiation`` without AVIF (`IMGPROXY_AUTO_WEBP`). Default off.
    public var negotiatesWebP = false
    /// AVIF alone, as ``formatNegotiation`` without WebP (`IMGPROXY_AUTO_AVIF`). Default off.
    public var negotiatesAVIF = false

    /// Formats that `Accept` picks even when the URL names another (imgproxy's
    /// `IMGPROXY_ENFORCE_WEBP`, `_AVIF`, `_JXL`): each also turns its negotiation on. Every
    /// response then carries `Vary: Accept`. Default none.
    public var enforcedFormats: OutputFormatChoice.NegotiatedFormats = []

    /// The formats negotiation may pick: AVIF and WebP with ``formatNegotiation``, each alone
    /// with ``negotiatesAVIF`` or ``negotiatesWebP``, JPEG XL with ``negotiatesJXL``, and the
    /// ``enforcedFormats``.
    public var negotiatedFormats: OutputFormatChoice.NegotiatedFormats {
        var formats: OutputFormatChoice.NegotiatedFormats = formatNegotiation ? .modern : []
        formats.formUnion(enforcedFormats)
        if negotiatesJXL { formats.insert(.jxl) }
        if negotiatesWebP { formats.insert(.webp) }
        if negotiatesAVIF { formats.insert(.avif) }
        return formats
    }

    /// A configuration checking signatures with `signer` (`nil`: insecure).
    public init(signer: URLSigner?) { self.signer = signer }
}
