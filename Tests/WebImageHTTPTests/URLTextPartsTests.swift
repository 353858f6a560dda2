import Foundation
import Testing

@testable import WebImageHTTP

@Suite("URL text parts")
struct URLTextPartsTests {
    /// The same split made another way (by Character, on String's own searches).
    static func reference(_ text: String) -> (scheme: String, host: String, port: String?)? {
        guard let colon = text.firstIndex(of: ":") else { return nil }
        let scheme = String(text[..<colon])
        let rest = text[text.index(after: colon)...]
        guard rest.hasPrefix("//") else { return (scheme, "", nil) }
        let authority = rest.dropFirst(2).prefix { !"/?#".contains($0) }
        let hostAndPort = authority.split(separator: "@", omittingEmptySubsequences: false).last ?? ""
        if hostAndPort.hasPrefix("[") {
            guard let close = hostAndPort.firstIndex(of: "]") else { return (scheme, String(hostAndPort), nil) }
            let host = hostAndPort[...close] == "[]" ? "" : String(hostAndPort[...close])
            let after = hostAndPort[hostAndPort.index(after: close)...]
            if after.isEmpty { return (scheme, host, nil) }
            return after.hasPrefix(":") ? (scheme, host, String(after.dropFirst())) : (scheme, String(hostAndPort), nil)
        }
        guard let portColon = hostAndPort.lastIndex(of: ":") else { return (scheme, String(hostAndPort), nil) }
        return (scheme, String(hostAndPort[..<portColon]), String(hostAndPort[hostAndPort.index(after: portColon)...]))
    }

    /// Digits only, at most five, from 1 to 65535.
    static func portNumber(_ text: String) -> Int? {
        guard !text.isEmpty, text.count <= 5, text.allSatisfy({ ("0"..."9").contains($0) }) else { return nil }
        return Int(text).flatMap { (1...65535).contains($0) ? $0 : nil }
    }

    @Test("Scheme, host and port agree with a Character-based split on every combination, non-ASCII text included")
    func agreesWithReference() {
        let schemes = ["http", "HTTPS", "ftp", "", "日本"]
        let users = ["", "u@", "user:pa:ss@", "ü@x@", "@"]
        let hosts = ["example.com", "127.0.0.1", "[::1]", "[]", "", "bücher.example", "[::1", "[::1]x", "a:b"]
        let ports = ["", ":", ":8080", ":99999999999999999999", ":0", ":8a", ":65535", ":65536", ":00080"]
        let tails = ["", "/", "/a:b@c", "?q=1:2", "#f:g", "/日本/ä"]
        var checked = 0
        for scheme in schemes {
            for separator in ["://", ":", ":/"] {
                for user in users {
                    for host in hosts {
                        for port in ports {
                            for tail in tails {
                                let text = scheme + separator + user + host + port + tail
                                let parts = URLTextParts(text)
                                let expected = Self.reference(text)
                                #expect(parts.map(\.scheme).map(String.init) == expected?.scheme, "\(text)")
                                #expect(parts.map(\.host).map(String.init) == expected?.host, "\(text)")
                                #expect(parts?.port.map(String.init) == expected?.port, "\(text)")
                                let scheme = expected?.scheme.lowercased()
                                #expect(parts?.isHTTPS == scheme.map { $0 == "https" }, "\(text)")
                                #expect(parts?.isHTTP == scheme.map { $0 == "http" || $0 == "https" }, "\(text)")
                                #expect(parts?.hasHost == expected.map { !$0.host.isEmpty }, "\(text)")
                                #expect(parts?.portNumber == expected?.port.flatMap(Self.portNumber), "\(text)")
                                checked += 1
                            }
                        }
                    }
                }
            }
        }
        #expect(URLTextParts("no colon at all") == nil)
        #expect(checked == 5 * 3 * 5 * 9 * 9 * 6)
    }
}
