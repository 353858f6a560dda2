import Foundation

/// One processing option of a proxy URL, `name:arg1:arg2…` (`rs:fill:300:200`).
public struct ProxyOption: Sendable, Hashable {
    public var name: String
    public var arguments: [String]

    public init(name: String, arguments: [String]) {
        self.name = name
        self.arguments = arguments
    }

    /// Parses `name:args…`; `nil` for a segment without a colon.
    public init?(segment: Substring) {
        let parts = segment.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard parts.count >= 2, !parts[0].isEmpty else { return nil }
        self.init(name: parts[0], arguments: Array(parts.dropFirst()))
    }
}

/// A request path in imgproxy's format, taken apart:
/// `/{signature}/{options…}/plain/{percent-encoded source}[@{extension}]` or
/// `/{signature}/{options…}/{URL-safe base64 of the source, may be split by /}[.{extension}]`,
/// either behind `/info` for the image's facts instead of the image.
public struct ProxyPath: Sendable, Hashable {
    /// The first segment: the URL-safe base64 signature (anything under `--insecure`).
    public var signature: String
    /// What the signature covers: the path after the signature segment, leading `/` included,
    /// exactly as received.
    public var signedPath: String
    public var options: [ProxyOption]
    /// The source URL, decoded (percent-decoding for plain sources, base64 for encoded ones).
    public var source: String
    /// The extension asked for (`@png` or `.png`), lower-cased; `nil` when none.
    public var outputExtension: String?
    /// `/info/…`: the image's facts as JSON, not the image.
    public var isInfo: Bool

    /// Parses a request path (without the query).
    /// - Throws: ``ProxyError`` 400 (`badURL`) naming what is missing or malformed.
    public init(parsing path: String) throws(ProxyError) {
        try self.init(parsing: path, signedParts: Self.signedParts(of: path))
    }

    /// Parses `path` whose ``signedParts(of:)`` were taken already (to check the signature).
    init(
        parsing path: String,
        signedParts: (isInfo: Bool, signature: Substring, signedPath: Substring)?
    ) throws(ProxyError) {
        guard path.hasPrefix("/") else { throw .badURL("the path must start with /") }
        guard let signed = signedParts else {
            throw .badURL("expected /{signature}/{options}/{source}: there is no source")
        }
        isInfo = signed.isInfo
        signature = String(signed.signature)
        guard !signature.isEmpty else { throw .badURL("the signature segment is empty") }
        signedPath = String(signed.signedPath)
        let segments = signed.signedPath.dropFirst().split(separator: "/", omittingEmptySubsequences: false)
        var options: [ProxyOption] = []
        var index = 0
        while index < segments.count, segments[index] != "plain", let option = ProxyOption(segment: segments[index]) {
            options.append(option)
            index += 1
        }
        self.options = options
        if index < segments.count, segments[index] == "plain" {
            let plain = segments[(index + 1)...].joined(separator: "/")
            let (encoded, suffix) = Self.split(plain, at: "@")
            guard !encoded.isEmpty else { throw .badURL("no source URL after /plain/") }
            guard let decoded = encoded.removingPercentEncoding else {
                throw .badURL("the plain source '\(encoded)' has a malformed percent escape")
            }
            source = decoded
            outputExtension = suffix?.lowercased()
        } else {
            let joined = segments[index...].joined()
            let (encoded, suffix) = Self.split(joined, at: ".")
            guard !encoded.isEmpty else { throw .badURL("no source URL after the options") }
            guard let decoded = Self.base64URLDecode(encoded), let text = String(data: decoded, encoding: .utf8) else {
                throw .badURL("'\(encoded.prefix(64))' is neither an option (name:value) nor a URL-safe base64 source")
            }
            source = text
            outputExtension = suffix?.lowercased()
        }
        if let outputExtension, outputExtension.isEmpty {
            throw .badURL("the format extension after the source is empty")
        }
    }

    /// The signature segment and the part it signs (from the `/` after it), taken off before
    /// anything else is read: imgproxy checks the signature first, so an unsigned URL is 403
    /// whatever it holds. `nil` when the path has no segment after the signature's.
    static func signedParts(of path: String) -> (isInfo: Bool, signature: Substring, signedPath: Substring)? {
        var rest = Substring(path)
        guard rest.hasPrefix("/") else { return nil }
        let isInfo = rest.hasPrefix("/info/")
        if isInfo { rest = rest.dropFirst("/info".count) }
        rest = rest.dropFirst()
        guard let slash = rest.firstIndex(of: "/") else { return nil }
        return (isInfo, rest[..<slash], rest[slash...])
    }

    /// `text` before and after the last `separator` (`nil` after when there is none).
    private static func split(_ text: String, at separator: Character) -> (String, String?) {
        guard let index = text.lastIndex(of: separator) else { return (text, nil) }
        return (String(text[..<index]), String(text[text.index(after: index)...]))
    }

    /// URL-safe base64 with or without padding (standard alphabet accepted too).
    static func base64URLDecode(_ text: String) -> Data? {
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        guard !standard.contains("=") || standard.hasSuffix("=") else { return nil }
        standard = standard.trimmingCharacters(in: CharacterSet(charactersIn: "="))
        standard += String(repeating: "=", count: (4 - standard.count % 4) % 4)
        return Data(base64Encoded: standard)
    }

    /// Characters of the unpadded base64 of `byteCount` bytes.
    static func base64URLEncodedLength(of byteCount: Int) -> Int { (byteCount * 8 + 5) / 6 }

    /// URL-safe base64 without padding, as signatures and encoded sources are written.
    static func base64URLEncode<Bytes: Sequence>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }
}
