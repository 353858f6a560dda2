import Foundation

extension HTTPSession.Configuration.Proxy {
    /// A proxy from a URL as curl takes one: `http://user:password@host:port`, `host:port` or
    /// `host` (port 1080, curl's default). Only HTTP proxies (tunnelling with `CONNECT`).
    /// - Throws: ``HTTPSessionError/Code/invalidURL`` naming `source` (the variable or option
    ///   the value came from) and what is wrong with it.
    public init(parsing text: String, source: String) throws(HTTPSessionError) {
        func invalid(_ reason: String) -> HTTPSessionError {
            HTTPSessionError(.invalidURL, url: nil, message: "\(source) '\(text)': \(reason)")
        }
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let withScheme = trimmed.contains("://") ? trimmed : "http://" + trimmed
        guard let components = URLComponents(string: withScheme), let host = components.host, !host.isEmpty else {
            throw invalid("not a proxy URL such as http://proxy.example:3128")
        }
        guard components.scheme?.lowercased() == "http" else {
            throw invalid("only http:// proxies are supported, not \(components.scheme ?? "")://")
        }
        let port = components.port ?? 1080
        guard (1...65535).contains(port) else { throw invalid("the port must be 1 to 65535") }
        let credential = components.user.map {
            HTTPCredential(
                user: $0.removingPercentEncoding ?? $0,
                password: components.password?.removingPercentEncoding ?? ""
            )
        }
        self.init(
            host: host.trimmingCharacters(in: CharacterSet(charactersIn: "[]")),
            port: port,
            credential: credential
        )
    }
}

extension HTTPSession.Configuration {
    /// Which proxy each request goes through, by its URL's scheme and host, as curl reads
    /// `http_proxy`, `https_proxy`, `all_proxy` and `no_proxy` (``environment(_:)``).
    public struct ProxyRules: Sendable, Hashable {
        /// The proxy for `http://` URLs; `nil`: direct.
        public var http: Proxy?
        /// The proxy for `https://` URLs (a `CONNECT` tunnel, so TLS stays end to end); `nil`: direct.
        public var https: Proxy?
        /// Hosts that connect directly, as `no_proxy` lists them: a host name also covers its
        /// subdomains (`example.com` and `.example.com` both match `img.example.com`), IP
        /// addresses match exactly, and `*` sends every host directly. Case-insensitive.
        public var bypass: [String]

        public init(http: Proxy? = nil, https: Proxy? = nil, bypass: [String] = []) {
            self.http = http
            self.https = https
            self.bypass = bypass
        }

        /// The rules the environment sets, or `nil` when it names no proxy. Lower-case names win
        /// over upper-case ones (`https_proxy` over `HTTPS_PROXY`); `all_proxy` covers a scheme
        /// without its own; an empty value means none.
        /// - Throws: ``HTTPSessionError/Code/invalidURL`` naming the variable when a value is
        ///   not a proxy URL.
        public static func environment(
            _ environment: [String: String] = ProcessInfo.processInfo.environment
        ) throws(HTTPSessionError) -> ProxyRules? {
            func value(_ name: String) -> (name: String, value: String)? {
                for candidate in [name.lowercased(), name.uppercased()] {
                    if let value = environment[candidate] { return value.isEmpty ? nil : (candidate, value) }
                }
                return nil
            }
            func proxy(_ name: String) throws(HTTPSessionError) -> Proxy? {
                guard let found = value(name) ?? value("all_proxy") else { return nil }
                return try Proxy(parsing: found.value, source: found.name)
            }
            let rules = ProxyRules(
                http: try proxy("http_proxy"),
                https: try proxy("https_proxy"),
                bypass: value("no_proxy").map { parseBypass($0.value) } ?? []
            )
            return rules.http == nil && rules.https == nil ? nil : rules
        }

        /// `no_proxy`'s comma-separated entries, trimmed and lower-cased.
        public static func parseBypass(_ list: String) -> [String] {
            list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }.filter {
                !$0.isEmpty
            }
        }

        /// The proxy for `url`, or `nil` to connect directly.
        public func proxy(for url: URL) -> Proxy? {
            guard let host = url.host?.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "[]")) else {
                return nil
            }
            if bypasses(host) { return nil }
            switch url.scheme?.lowercased() {
            case "http": return http
            case "https": return https
            default: return nil
            }
        }

        /// Whether `host` (lower-case, no brackets) is on the bypass list.
        public func bypasses(_ host: String) -> Bool {
            bypass.contains { entry in
                let name = entry.hasPrefix(".") ? String(entry.dropFirst()) : entry
                let bare = name.trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
                return entry == "*" || host == bare || host.hasSuffix("." + bare)
            }
        }
    }
}
