import Foundation
import WebImageCoders

/// The format a response is written in, and whether that choice depended on `Accept`.
public struct OutputFormatChoice: Sendable, Hashable {
    public var format: ImageFormat
    /// The response must carry `Vary: Accept` (the format came from negotiation).
    public var variesWithAccept: Bool

    /// Chooses as imgproxy does, with our defaults: the URL's format (`f:` or the extension)
    /// when given; otherwise, with `negotiation`, AVIF (when `encodesAVIF`) then WebP if
    /// `accept` lists them with a non-zero q; otherwise the source's own format when it can be
    /// written (an animation stays animated), else PNG for images with alpha and JPEG for the
    /// rest — `.unknown` while `hasAlpha` is not known yet (before decoding). `Vary: Accept` is
    /// set exactly when `Accept` was consulted.
    public init(
        requested: ImageFormat?,
        source: ImageFormat,
        hasAlpha: Bool?,
        accept: String?,
        negotiation: Bool,
        encodesAVIF: Bool = true
    ) {
        self.init(
            requested: requested,
            source: source,
            hasAlpha: hasAlpha,
            negotiated: negotiation ? Self.negotiatedFormat(accept, encodesAVIF: encodesAVIF) : nil,
            negotiation: negotiation
        )
    }

    /// The choice with `Accept` read already: `negotiated` is what ``negotiatedFormat(_:encodesAVIF:)``
    /// gave (`nil` without negotiation).
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

    /// What negotiation picks from `accept`: AVIF (when `encodesAVIF`) then WebP when listed with
    /// a non-zero q, else `nil` (the source's format or a fallback).
    static func negotiatedFormat(_ accept: String?, encodesAVIF: Bool) -> ImageFormat? {
        let accepted = acceptedTypes(accept ?? "")
        if encodesAVIF, accepted.contains("image/avif") { return .avif }
        return accepted.contains("image/webp") ? .webp : nil
    }

    public init(format: ImageFormat, variesWithAccept: Bool) {
        self.format = format
        self.variesWithAccept = variesWithAccept
    }

    /// The three answers negotiation can give, as a short name: `avif`, `webp` or `other`; `""`
    /// without negotiation (then `Accept` does not matter). Requests in one bucket get the same
    /// response, so caches in front key on this instead of the whole header.
    public static func acceptBucket(_ accept: String?, negotiation: Bool, encodesAVIF: Bool = true) -> String {
        guard negotiation else { return "" }
        return negotiatedFormat(accept, encodesAVIF: encodesAVIF)?.rawValue ?? "other"
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
