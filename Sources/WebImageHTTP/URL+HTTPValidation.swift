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
        guard portText.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
            let port = Int(portText.prefix(6)), portText.count <= 5, (1...65535).contains(port)
        else { return "port \(portText.prefix(24)) is not a number from 1 to 65535" }
        return nil
    }

    /// The text after the host's `:` in `scheme://[userinfo@]host[:port]/…`, or `nil` when the
    /// authority has no port.
    static func portText(in text: String) -> Substring? {
        guard let schemeEnd = text.range(of: "://") else { return nil }
        let rest = text[schemeEnd.upperBound...]
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        let hostAndPort = authority.lastIndex(of: "@").map { authority[authority.index(after: $0)...] } ?? authority
        if hostAndPort.hasPrefix("[") {
            guard let close = hostAndPort.firstIndex(of: "]") else { return nil }
            let afterBracket = hostAndPort[hostAndPort.index(after: close)...]
            return afterBracket.hasPrefix(":") ? afterBracket.dropFirst() : nil
        }
        guard let colon = hostAndPort.lastIndex(of: ":") else { return nil }
        return hostAndPort[hostAndPort.index(after: colon)...]
    }
}
