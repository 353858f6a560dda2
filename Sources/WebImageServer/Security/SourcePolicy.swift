import Foundation

/// Which source URLs the proxy may fetch: http and https only, hosts on public networks unless
/// allowed otherwise, and — when an allow-list is given — only sources under one of its
/// prefixes. The same rules apply to every redirect hop and to the address actually connected
/// to (``check(connectingTo:host:)``), so a name that resolves to 127.0.0.1 is refused too.
public struct SourcePolicy: Sendable, Hashable {
    /// Let sources on loopback addresses (127/8, ::1, `localhost`) through: for tests.
    public var allowsLoopback = false
    /// Let sources on private networks through (RFC 1918, CGNAT, link-local, unique-local).
    public var allowsPrivateNetworks = false
    /// When not empty, a source must be under one of these.
    public var allowedPrefixes: [SourcePrefix] = []
    /// imgproxy's `IMGPROXY_ALLOWED_SOURCES`: when not empty, a source must begin with one of
    /// these (`*` matches any run of characters but `/`). A source passes when either list
    /// allows it.
    public var allowedPatterns: [SourcePattern] = []

    public init(allowsLoopback: Bool = false, allowsPrivateNetworks: Bool = false, allowedPrefixes: [SourcePrefix] = [])
    {
        self.allowsLoopback = allowsLoopback
        self.allowsPrivateNetworks = allowsPrivateNetworks
        self.allowedPrefixes = allowedPrefixes
    }

    /// Checks a source (or redirect) URL before anything is sent: its scheme, its host when it
    /// is an address literal or `localhost`, and the allow-list.
    /// - Returns: the parsed URL.
    /// - Throws: ``ProxyError`` 400 for a URL that does not parse, 403 (`sourceNotAllowed`)
    ///   naming the rule it breaks.
    @discardableResult
    public func check(_ source: String) throws(ProxyError) -> URL {
        guard let url = URL(string: source), let scheme = url.scheme?.lowercased() else {
            throw .badURL("the source '\(source.prefix(200))' is not an absolute URL")
        }
        guard scheme == "http" || scheme == "https" else {
            throw .sourceNotAllowed("the source's scheme must be http or https, not \(scheme)")
        }
        guard let host = url.host, !host.isEmpty else {
            throw .badURL("the source '\(source.prefix(200))' has no host")
        }
        let name = host.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "[]."))
        if name == "localhost" || name.hasSuffix(".localhost") {
            guard allowsLoopback else { throw .sourceNotAllowed("\(host) is a loopback host (--allow-loopback)") }
        } else if let address = IPAddress(name) {
            try check(address, host: host)
        }
        if !allowedPrefixes.isEmpty || !allowedPatterns.isEmpty,
            !allowedPrefixes.contains(where: { $0.allows(url) }),
            !allowedPatterns.contains(where: { $0.matches(source) })
        {
            throw .sourceNotAllowed("the source is not under any --allow-source prefix or --allowed-sources pattern")
        }
        return url
    }

    /// Checks the address a connection actually reached (after DNS), for `host` when known.
    /// - Throws: ``ProxyError`` 403 naming the host and the address's network.
    public func check(connectingTo address: IPAddress, host: String? = nil) throws(ProxyError) {
        try check(address, host: host ?? address.description)
    }

    /// Why a connection to `address` (an IP address as text) is refused, or `nil` when it is
    /// allowed: the hook ``ImageProxy/makeManager(configuration:cacheDirectory:cacheSize:)`` gives the
    /// HTTP session, so a DNS name is judged by the address it resolved to.
    public func refusal(connectingTo address: String) -> String? {
        guard let parsed = IPAddress(address) else { return "\(address) is not an IP address" }
        do throws(ProxyError) {
            try check(connectingTo: parsed)
            return nil
        } catch {
            return error.message
        }
    }

    private func check(_ address: IPAddress, host: String) throws(ProxyError) {
        let kind = address.kind
        let allowed: Bool
        switch kind {
        case .publicAddress: allowed = true
        case .loopback: allowed = allowsLoopback
        case .privateNetwork, .sharedAddressSpace, .linkLocal, .uniqueLocal: allowed = allowsPrivateNetworks
        case .multicast, .unspecified, .reserved, .embedsIPv4: allowed = false
        }
        guard allowed else {
            let hint =
                switch kind {
                case .loopback: " (--allow-loopback)"
                case .privateNetwork, .sharedAddressSpace, .linkLocal, .uniqueLocal: " (--allow-private-networks)"
                default: ""
                }
            let resolved = host.trimmingCharacters(in: CharacterSet(charactersIn: "[]")) == address.description
            let subject = resolved ? host : "\(host) (\(address))"
            throw .sourceNotAllowed("\(subject) is a \(kind.rawValue) address\(hint)")
        }
    }
}

/// An `--allow-source` prefix: a URL whose scheme, host and port a source must equal and
/// whose path the source's path must start with, segment by segment (`/images` allows
/// `/images/a.png`, not `/images-private/a.png`). A prefix without a path allows its whole
/// origin. Never a comparison of strings.
public struct SourcePrefix: Sendable, Hashable, CustomStringConvertible {
    public let scheme: String
    public let host: String
    public let port: Int
    /// Path segments, percent-decoded, dot segments resolved.
    public let segments: [String]
    public let description: String

    /// - Throws: ``ProxyError`` 400 when `prefix` is not an http(s) URL with a host.
    public init(_ prefix: String) throws(ProxyError) {
        guard let url = URL(string: prefix), let scheme = url.scheme?.lowercased(),
            scheme == "http" || scheme == "https",
            let host = url.host, !host.isEmpty
        else { throw .badURL("--allow-source '\(prefix)' is not an http(s) URL with a host") }
        self.scheme = scheme
        self.host = host.lowercased()
        port = url.port ?? (scheme == "https" ? 443 : 80)
        segments = Self.segments(url)
        description = prefix
    }

    func allows(_ url: URL) -> Bool {
        guard let scheme = url.scheme?.lowercased(), scheme == self.scheme, url.host?.lowercased() == host,
            (url.port ?? (scheme == "https" ? 443 : 80)) == port
        else { return false }
        let path = Self.segments(url)
        // "/images/" allows what is under it; "/images" allows itself and what is under it.
        return path.count >= segments.count && Array(path.prefix(segments.count)) == segments
    }

    private static func segments(_ url: URL) -> [String] {
        var segments: [String] = []
        for segment in url.path.split(separator: "/", omittingEmptySubsequences: true) {
            switch segment {
            case ".": continue
            case "..": _ = segments.popLast()
            default: segments.append(String(segment))
            }
        }
        return segments
    }
}

/// An `--allowed-sources` entry as imgproxy matches it: the source URL must begin with the
/// pattern, where each `*` stands for any run of characters without a `/`
/// (`https://*.example.com/` allows `https://img.example.com/a.jpg`, not
/// `https://evil.com/.example.com/`).
public struct SourcePattern: Sendable, Hashable, CustomStringConvertible {
    public let description: String
    private let parts: [Substring]

    public init(_ pattern: String) {
        description = pattern
        parts = pattern.split(separator: "*", omittingEmptySubsequences: false)
    }

    /// Whether `source` begins with the pattern.
    public func matches(_ source: String) -> Bool {
        Self.matches(Substring(source), parts[...])
    }

    /// Whether `text` begins with the first part, then a run without `/`, then the rest.
    private static func matches(_ text: Substring, _ parts: ArraySlice<Substring>) -> Bool {
        guard let first = parts.first else { return true }
        guard text.hasPrefix(first) else { return false }
        let rest = text.dropFirst(first.count)
        let remaining = parts.dropFirst()
        guard !remaining.isEmpty else { return true }
        // The wildcard takes 0…n characters up to the first `/`; try each split.
        var index = rest.startIndex
        while true {
            if matches(rest[index...], remaining) { return true }
            guard index < rest.endIndex, rest[index] != "/" else { return false }
            index = rest.index(after: index)
        }
    }
}
