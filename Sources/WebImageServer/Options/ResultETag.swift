import Crypto
import Foundation
import WebImageCoders

/// A strong entity tag for a result: the same canonical options, output format, quality, source
/// bytes, watermark and encoders always give the same tag, and a change to any of them a
/// different one; so a `304` is never answered for other bytes.
public enum ResultETag {
    /// `"` + 32 hex digits of SHA-256(canonical options, format, quality, source fingerprint,
    /// encoder version) + `"`. The proxy passes as `sourceFingerprint` the XXH64 and length of
    /// the source's bytes (plus the watermark's, when one is drawn), never the source's own
    /// `ETag` or `Last-Modified`, which an origin may reuse for other bytes; `encoderVersion`
    /// names the codec libraries.
    public static func make(
        options: ProcessingOptions,
        format: ImageFormat,
        quality: Int,
        sourceFingerprint: String,
        encoderVersion: String
    ) -> String {
        let input = [
            options.canonicalDescription, format.rawValue, String(quality), sourceFingerprint, encoderVersion,
        ].joined(separator: "\u{1F}")
        let digest = SHA256.hash(data: Data(input.utf8))
        return "\"" + digest.prefix(16).map { String(format: "%02x", $0) }.joined() + "\""
    }

    /// Whether an `If-None-Match` header names `etag` (or is `*`); weak tags compare weakly.
    public static func matches(ifNoneMatch header: String, etag: String) -> Bool {
        header.split(separator: ",").contains { candidate in
            let tag = candidate.trimmingCharacters(in: .whitespaces)
            return tag == "*" || tag == etag || (tag.hasPrefix("W/") && String(tag.dropFirst(2)) == etag)
        }
    }
}
