import Foundation
import WebImageCoders

/// The format a response is written in, and whether that choice depended on `Accept`.
public struct OutputFormatChoice: Sendable, Hashable {
    public var format: ImageFormat
    /// The response must carry `Vary: Accept` (the format came from negotiation).
    public var variesWithAccept: Bool

    /// The formats negotiation may pick from `Accept`, in imgproxy's order: JPEG XL (its
    /// `IMGPROXY_AUTO_JXL`), AVIF, WebP. Empty: `Accept` is never read.
    public struct NegotiatedFormats: OptionSet, Sendable, Hashable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }

        public static let jxl = NegotiatedFormats(rawValue: 1)
        public static let avif = NegotiatedFormats(rawValue: 2)
        public static let webp = NegotiatedFormats(rawValue: 4)
        /// AVIF and WebP (`--format-negotiation`).
        public static let modern: NegotiatedFormats = [.avif, .webp]

        /// The member for `format`, `nil` for formats negotiation never picks.
        public static func member(_ format: ImageFormat) -> NegotiatedFormats? {
            switch format {
            case .jxl: .jxl
            case .avif: .avif
            case .webp: .webp
            default: nil
            }
        }

        /// These formats for a source: JPEG XL and AVIF never for an `animated` one, as
        /// imgproxy, and AVIF only when an AVIF encoder is present.
        public func forSource(animated: Bool, encodesAVIF: Bool = true) -> NegotiatedFormats {
            var formats = self
            if animated { formats.remove(.jxl) }
            if !encodesAVIF { formats.remove(.avif) }
            return formats
        }
    }

    /// Chooses as imgproxy does, with our defaults: the URL's format (`f:` or the extension)
    /// when given; otherwise the first of `negotiation`'s formats (JPEG XL, AVIF, WebP) that
    /// `accept` lists with a non-zero q; otherwise the source's own format when it can be written
    /// (an animation stays animated), else PNG for images with alpha and JPEG for the rest —
    /// `.unknown` while `hasAlpha` is not known yet (before decoding). `Vary: Accept` is set
    /// exactly when `Accept` was consulted.
    public init(
        requested: ImageFormat?,
        source: ImageFormat,
        hasAlpha: Bool?,
        accept: String?,
        negotiation: NegotiatedFormats
    ) {
        self.init(
            requested: requested,
            source: source,
            hasAlpha: hasAlpha,
            negotiated: Self.negotiatedFormat(accept, among: negotiation),
            negotiation: !negotiation.isEmpty
        )
    }

    /// The choice with `Accept` read already: `negotiated` is what
    /// ``negotiatedFormat(_:among:)`` gave (`nil` without negotiation).
    init(requested: ImageFormat?, source: ImageFormat, hasAlpha: Bool?, negotiated: ImageFormat?, negotiation: Bool) {
        if let requested {
            self.init(format: requested, variesWithAccept: false)
        } else if let negotiated {
            self.init(format: negotiated, variesWithAccept: true)
        } else {
            let fallback: ImageFormat =
                if ProcessingOptions.outputFormats.contains(source) {
                    source
                } else if let hasAlpha {
                    hasAlpha ? .png : .jpeg
                } else {
                    .unknown
                }
            self.init(format: fallback, variesWithAccept: negotiation)
        }
    }

    /// What negotiation picks from `accept`: the first of `formats` (JPEG XL, AVIF, WebP) it
    /// lists with a non-zero q, else `nil` (the source's format or a fallback).
    static func negotiatedFormat(_ accept: String?, among formats: NegotiatedFormats) -> ImageFormat? {
        guard !formats.isEmpty else { return nil }
        let accepted = acceptedTypes(accept ?? "")
        let order: [(NegotiatedFormats, ImageFormat)] = [(.jxl, .jxl), (.avif, .avif), (.webp, .webp)]
        return order.first { formats.contains($0.0) && accepted.contains($0.1.mimeType) }?.1
    }

    public init(format: ImageFormat, variesWithAccept: Bool) {
        self.format = format
        self.variesWithAccept = variesWithAccept
    }

    /// The answers negotiation can give, as a short name: `jxl`, `avif`, `webp` or `other`;
    /// `""` without negotiation (then `Accept` does not matter). Requests in one bucket get the
    /// same response, so caches in front key on this instead of the whole header.
    public static func acceptBucket(_ accept: String?, negotiation: NegotiatedFormats) -> String {
        guard !negotiation.isEmpty else { return "" }
        return negotiatedFormat(accept, among: negotiation)?.rawValue ?? "other"
    }

    /// The media types an `Accept` header lists with q above 0, lower-cased (`*/*` and
    /// `image/*` are not taken as a promise of AVIF or WebP).
    static func acceptedTypes(_ header: String) -> Set<String> {
        var types: Set<String> = []
        for item in header.split(separator: ",") {
            let parts = item.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            guard let type = parts.first, !type.isEmpty else { continue }
            let quality = parts.dropFirst().first { $0.hasPrefix("q=") }.flatMap { Double($0.dropFirst(2)) } ?? 1
            if quality > 0 { types.insert(type) }
        }
        return types
    }
}
