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
        let utf8 = text.utf8
        guard let colon = utf8.firstIndex(of: UInt8(ascii: ":")) else { return nil }
        scheme = text[..<colon]
        let afterColon = utf8.index(after: colon)
        guard utf8[afterColon...].starts(with: [UInt8(ascii: "/"), UInt8(ascii: "/")]) else {
            (host, port) = (text[afterColon..<afterColon], nil)
            return
        }
        let authorityStart = utf8.index(afterColon, offsetBy: 2)
        let authorityEnd =
            utf8[authorityStart...].firstIndex {
                $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#")
            } ?? utf8.endIndex
        var hostStart = authorityStart
        if let at = utf8[authorityStart..<authorityEnd].lastIndex(of: UInt8(ascii: "@")) {
            hostStart = utf8.index(after: at)
        }
        let hostAndPort = utf8[hostStart..<authorityEnd]
        var hostEnd = authorityEnd
        if hostAndPort.first == UInt8(ascii: "[") {
            if let close = hostAndPort.firstIndex(of: UInt8(ascii: "]")) { hostEnd = utf8.index(after: close) }
            if hostEnd < authorityEnd, utf8[hostEnd] != UInt8(ascii: ":") { hostEnd = authorityEnd }
        } else if let portColon = hostAndPort.lastIndex(of: UInt8(ascii: ":")) {
            hostEnd = portColon
        }
        let bracketsOnly = utf8.distance(from: hostStart, to: hostEnd) == 2 && hostAndPort.first == UInt8(ascii: "[")
        host = bracketsOnly ? text[hostStart..<hostStart] : text[hostStart..<hostEnd]
        port = hostEnd < authorityEnd ? text[utf8.index(after: hostEnd)..<authorityEnd] : nil
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
