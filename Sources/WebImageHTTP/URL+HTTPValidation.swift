import Foundation

extension URL {
    /// Why this URL cannot be requested over HTTP, or `nil` when it can: the scheme is `http` or
    /// `https`, there is a host, and a port, when the URL spells one, is a number from 1 to 65535.
    ///
    /// The port is read from the URL's text: `URL.port` is `nil` for a port too long for an `Int`
    /// (which would silently mean port 80), and a value over 65535 must never reach a socket.
    public var httpValidationFailure: String? {
        guard let scheme = scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            return "not an http or https URL"
        }
        guard let host, !host.isEmpty else { return "no host" }
        guard let portText = Self.portText(in: absoluteString) else { return nil }
        guard !portText.isEmpty else { return nil }  // "host:/" means the default port
        // Digits only, so the UTF-8 count is the length (no Character counting).
        let digits = portText.utf8
        guard digits.count <= 5, digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
            let port = Int(portText), (1...65535).contains(port)
        else { return "port \(portText.prefix(24)) is not a number from 1 to 65535" }
        return nil
    }

    /// The text after the host's `:` in `scheme://[userinfo@]host[:port]/…`, or `nil` when the
    /// authority has no port.
    static func portText(in text: String) -> Substring? {
        // Every delimiter is ASCII, so the UTF-8 view finds them without Character breaking, and
        // its indices are valid String indices.
        let utf8 = text.utf8
        // The scheme ends at the first ":", which "//" must follow.
        guard let colon = utf8.firstIndex(of: UInt8(ascii: ":")),
            utf8[utf8.index(after: colon)...].starts(with: [UInt8(ascii: "/"), UInt8(ascii: "/")])
        else { return nil }
        let schemeEnd = utf8.index(colon, offsetBy: 3)
        let rest = utf8[schemeEnd...]
        let authorityEnd =
            rest.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }
            ?? utf8.endIndex
        var hostStart = schemeEnd
        if let at = utf8[schemeEnd..<authorityEnd].lastIndex(of: UInt8(ascii: "@")) {
            hostStart = utf8.index(after: at)
        }
        let hostAndPort = utf8[hostStart..<authorityEnd]
        if hostAndPort.first == UInt8(ascii: "[") {
            guard let close = hostAndPort.firstIndex(of: UInt8(ascii: "]")) else { return nil }
            let afterBracket = utf8.index(after: close)
            guard afterBracket < authorityEnd, utf8[afterBracket] == UInt8(ascii: ":") else { return nil }
            return text[utf8.index(after: afterBracket)..<authorityEnd]
        }
        guard let colon = hostAndPort.lastIndex(of: UInt8(ascii: ":")) else { return nil }
        return text[utf8.index(after: colon)..<authorityEnd]
    }
}
