import Foundation
import WebImageCoders

/// The `Content-Disposition` of a result, as imgproxy sends it (`inline`, or `attachment` with
/// `return_attachment`; the name from `filename` or the source's last path segment, the
/// extension of the result's format), written so that no name can break the header: the quoted
/// `filename` holds printable ASCII only (anything else, quotes and backslashes become `_`),
/// and `filename*` (RFC 5987/6266) carries the exact UTF-8 name percent-encoded.
enum ContentDisposition {
    static func value(name: String?, source: URL, format: ImageFormat, attachment: Bool) -> String {
        var stem = name ?? source.deletingPathExtension().lastPathComponent
        if stem.isEmpty || stem == "/" { stem = "image" }
        let full = stem + "." + format.fileExtension
        let fallback = String(
            full.unicodeScalars.map { scalar -> Character in
                (0x20..<0x7F).contains(scalar.value) && scalar != "\"" && scalar != "\\" ? Character(scalar) : "_"
            }
        )
        var value = (attachment ? "attachment" : "inline") + "; filename=\"\(fallback)\""
        if fallback != full { value += "; filename*=UTF-8''" + percentEncoded(full) }
        return value
    }

    /// RFC 5987's `attr-char`s as they are, every other UTF-8 byte as `%XX`.
    private static func percentEncoded(_ text: String) -> String {
        let kept = Set("!#$&+-.^_`|~".utf8)
        return text.utf8.map { byte in
            let isAlphanumeric =
                (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
            return isAlphanumeric || kept.contains(byte) ? String(UnicodeScalar(byte)) : String(format: "%%%02X", byte)
        }.joined()
    }
}
