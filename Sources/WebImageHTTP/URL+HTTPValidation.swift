import Foundation

extension URL {
    /// Why this URL cannot be requested over HTTP, or `nil` when it can: the scheme is `http` or
    /// `https`, there is a host, and a port, when the URL spells one, is a number from 1 to 65535.
    ///
    /// The port is read from the URL's text: `URL.port` is `nil` for a port too long for an `Int`
    /// (which would silently mean port 80), and a value over 65535 must never reach a socket.
    /// One pass over the URL's text: every request checks its URL, so this stays off
    /// Foundation's component parsing.
    public var httpValidationFailure: String? {
        guard let parts = URLTextParts(absoluteString), parts.isHTTP else { return "not an http or https URL" }
        guard parts.hasHost else { return "no host" }
        guard parts.spellsPort else { return nil }  // "host:/": the default port
        guard parts.portNumber != nil else {
            return "port \(parts.port?.prefix(24) ?? "") is not a number from 1 to 65535"
        }
        return nil
    }
}

/// The scheme, host and port of an absolute URL's text, found in one pass over its UTF-8 with
/// integer offsets (`String.UTF8View` indices check their alignment at every step), without
/// Foundation's component parsing. What a check needs (the scheme's kind, an empty host, the
/// port's number) is read in that pass; the parts as text are made only when asked for.
struct URLTextParts {
    private let text: String
    private let offsets: Offsets

    private struct Offsets {
        /// The first `:`.
        var colon: Int
        /// Between `//` (or the userinfo's `@`) and the port's `:` or the path; an IPv6
        /// literal keeps its brackets. Empty when the URL has no authority.
        var host: Range<Int>
        /// After the host's `:`; `nil` when the authority has none.
        var port: Range<Int>?
        var isHTTP = false
        var isHTTPS = false
        var portNumber: Int?
    }

    /// `nil` when the text has no `:` (no scheme).
    init?(_ text: String) {
        var text = text
        text.makeContiguousUTF8()  // native strings are already: no copy
        guard let found = text.utf8.withContiguousStorageIfAvailable(Self.scan), let offsets = found else {
            return nil
        }
        self.text = text
        self.offsets = offsets
    }

    /// Before the first `:`.
    var scheme: Substring { slice(0..<offsets.colon) }
    /// The host, with an IPv6 literal's brackets; empty when the URL has none.
    var host: Substring { slice(offsets.host) }
    /// After the host's `:`; `nil` when the authority has none.
    var port: Substring? { offsets.port.map(slice) }
    var hasHost: Bool { !offsets.host.isEmpty }
    /// The authority spells a port (`host:` with nothing after it counts as none).
    var spellsPort: Bool { offsets.port.map { !$0.isEmpty } ?? false }

    /// The scheme is `http` or `https`, in any case.
    var isHTTP: Bool { offsets.isHTTP }
    var isHTTPS: Bool { offsets.isHTTPS }
    /// The spelled port when it is all digits and from 1 to 65535.
    var portNumber: Int? { offsets.portNumber }

    private func slice(_ range: Range<Int>) -> Substring {
        let utf8 = text.utf8
        let start = utf8.index(utf8.startIndex, offsetBy: range.lowerBound)
        return text[start..<utf8.index(start, offsetBy: range.count)]
    }

    private static func scan(_ bytes: UnsafeBufferPointer<UInt8>) -> Offsets? {
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")) else { return nil }
        var offsets = authority(bytes, after: colon)
        offsets.isHTTPS = matches(bytes[..<colon], "https")
        offsets.isHTTP = offsets.isHTTPS || matches(bytes[..<colon], "http")
        offsets.portNumber = offsets.port.flatMap { number(bytes[$0]) }
        return offsets
    }

    private static func authority(_ bytes: UnsafeBufferPointer<UInt8>, after colon: Int) -> Offsets {
        let afterColon = colon + 1
        guard bytes.count - afterColon >= 2, bytes[afterColon] == UInt8(ascii: "/"),
            bytes[afterColon + 1] == UInt8(ascii: "/")
        else { return Offsets(colon: colon, host: afterColon..<afterColon, port: nil) }
        let authorityStart = afterColon + 2
        var authorityEnd = authorityStart
        while authorityEnd < bytes.count {
            let byte = bytes[authorityEnd]
            if byte == UInt8(ascii: "/") || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#") { break }
            authorityEnd += 1
        }
        var hostStart = authorityStart
        for offset in stride(from: authorityEnd - 1, through: authorityStart, by: -1)
        where bytes[offset] == UInt8(ascii: "@") {
            hostStart = offset + 1
            break
        }
        var hostEnd = authorityEnd
        let bracketed = hostStart < authorityEnd && bytes[hostStart] == UInt8(ascii: "[")
        if bracketed {
            if let close = (hostStart..<authorityEnd).first(where: { bytes[$0] == UInt8(ascii: "]") }) {
                hostEnd = close + 1
            }
            if hostEnd < authorityEnd, bytes[hostEnd] != UInt8(ascii: ":") { hostEnd = authorityEnd }
        } else if let portColon = (hostStart..<authorityEnd).last(where: { bytes[$0] == UInt8(ascii: ":") }) {
            hostEnd = portColon
        }
        let host = bracketed && hostEnd - hostStart == 2 ? hostStart..<hostStart : hostStart..<hostEnd
        return Offsets(colon: colon, host: host, port: hostEnd < authorityEnd ? (hostEnd + 1)..<authorityEnd : nil)
    }

    /// `bytes` spell `name` (lowercase ASCII), in any case.
    private static func matches(_ bytes: Slice<UnsafeBufferPointer<UInt8>>, _ name: StaticString) -> Bool {
        let expected = UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)
        return bytes.count == expected.count && zip(bytes, expected).allSatisfy { $0 | 0x20 == $1 }
    }

    /// All digits, at most five, from 1 to 65535.
    private static func number(_ digits: Slice<UnsafeBufferPointer<UInt8>>) -> Int? {
        guard !digits.isEmpty, digits.count <= 5 else { return nil }
        var value = 0
        for digit in digits {
            guard digit >= UInt8(ascii: "0"), digit <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int(digit - UInt8(ascii: "0"))
        }
        return (1...65535).contains(value) ? value : nil
    }
}
