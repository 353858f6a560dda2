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
        guard !parts.host.isEmpty else { return "no host" }
        guard let portText = parts.port, !portText.isEmpty else { return nil }  // "host:/": the default port
        guard parts.portNumber != nil else {
            return "port \(portText.prefix(24)) is not a number from 1 to 65535"
        }
        return nil
    }
}

/// The scheme, host and port of an absolute URL's text, found on its UTF-8 (every delimiter is
/// ASCII, so the indices are valid `String` indices) without Foundation's component parsing.
struct URLTextParts {
    /// Before the first `:`.
    let scheme: Substring
    /// Between `//` (or the userinfo's `@`) and the port's `:` or the path; an IPv6 literal
    /// keeps its brackets. Empty when the URL has no authority.
    let host: Substring
    /// After the host's `:`; `nil` when the authority has none.
    let port: Substring?

    /// `nil` when the text has no `:` (no scheme).
    init?(_ text: String) {
        var text = text
        // One pass over contiguous UTF-8 with integer offsets: `String.UTF8View` indices check
        // their alignment at every step. (Native strings are contiguous already: no copy.)
        text.makeContiguousUTF8()
        guard let found = text.utf8.withContiguousStorageIfAvailable(Self.bounds), let bounds = found else {
            return nil
        }
        let utf8 = text.utf8
        func index(_ offset: Int) -> String.Index { utf8.index(utf8.startIndex, offsetBy: offset) }
        scheme = text[..<index(bounds.colon)]
        host = text[index(bounds.host.lowerBound)..<index(bounds.host.upperBound)]
        port = bounds.port.map { text[index($0.lowerBound)..<index($0.upperBound)] }
    }

    /// Where the scheme's colon, the host and the port are, in UTF-8 offsets.
    private static func bounds(
        _ bytes: UnsafeBufferPointer<UInt8>
    ) -> (colon: Int, host: Range<Int>, port: Range<Int>?)? {
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")) else { return nil }
        let afterColon = colon + 1
        guard bytes.count - afterColon >= 2, bytes[afterColon] == UInt8(ascii: "/"),
            bytes[afterColon + 1] == UInt8(ascii: "/")
        else { return (colon, afterColon..<afterColon, nil) }
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
        return (colon, host, hostEnd < authorityEnd ? (hostEnd + 1)..<authorityEnd : nil)
    }

    /// The scheme is `http` or `https`, in any case.
    var isHTTP: Bool { isScheme("http") || isHTTPS }
    var isHTTPS: Bool { isScheme("https") }

    /// The spelled port when it is all digits and from 1 to 65535.
    var portNumber: Int? {
        guard let digits = port?.utf8, !digits.isEmpty, digits.count <= 5 else { return nil }
        var value = 0
        for digit in digits {
            guard digit >= UInt8(ascii: "0"), digit <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int(digit - UInt8(ascii: "0"))
        }
        return (1...65535).contains(value) ? value : nil
    }

    private func isScheme(_ name: StaticString) -> Bool {
        let expected = UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)
        return scheme.utf8.count == expected.count
            && zip(scheme.utf8, expected).allSatisfy { $0 | 0x20 == $1 }
    }
}
