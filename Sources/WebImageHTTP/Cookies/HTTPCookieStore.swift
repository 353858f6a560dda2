import Foundation
@_spi(WebImageInternals) import WebImageCoders

/// A cookie as RFC 6265 stores it.
public struct HTTPCookieRecord: Sendable, Hashable {
    public var name: String
    public var value: String
    /// The host (host-only cookies) or domain it belongs to, lowercased, without a leading dot.
    public var domain: String
    /// Sent only to exactly `domain` (no `Domain` attribute was given).
    public var isHostOnly: Bool
    public var path: String
    /// Sent only over https.
    public var isSecure: Bool
    public var isHTTPOnly: Bool
    /// `nil` for a session cookie.
    public var expiresDate: Date?
}

/// Cookies received with `Set-Cookie` and sent back with `Cookie` (NSHTTPCookieStorage's role),
/// following RFC 6265's domain, path, secure and expiry rules. Thread-safe.
///
/// A session uses a store only when ``HTTPSession/Configuration/cookieStore`` is set (off by
/// default: image loads carry no cookies).
public final class HTTPCookieStore: Sendable {
    /// A process-wide store.
    public static let shared = HTTPCookieStore()

    private let cookies = Protected<[HTTPCookieRecord]>([])

    public init() {}

    /// Every cookie that has not expired.
    public var allCookies: [HTTPCookieRecord] {
        let now = Date()
        return cookies.withLock { cookies in
            cookies.removeAll { $0.expiresDate.map { $0 <= now } ?? false }
            return cookies
        }
    }

    /// Stores each `Set-Cookie` header value received from `url`. Invalid cookies, and cookies
    /// for a domain `url` does not belong to, are ignored.
    public func store(setCookieHeaders values: [String], from url: URL, now: Date = Date()) {
        let parsed = values.compactMap { HTTPCookieParser.parse($0, from: url, now: now) }
        guard !parsed.isEmpty else { return }
        cookies.withLock { cookies in
            for cookie in parsed {
                cookies.removeAll { $0.name == cookie.name && $0.domain == cookie.domain && $0.path == cookie.path }
                if cookie.expiresDate.map({ $0 > now }) ?? true { cookies.append(cookie) }
            }
        }
    }

    /// The cookies to send to `url`, longest path first.
    public func cookies(for url: URL, now: Date = Date()) -> [HTTPCookieRecord] {
        guard let host = url.host?.lowercased() else { return [] }
        let isSecure = url.scheme?.lowercased() == "https"
        let path = url.path.isEmpty ? "/" : url.path
        return cookies.withLock { cookies in
            cookies.removeAll { $0.expiresDate.map { $0 <= now } ?? false }
            return cookies.filter { cookie in
                (cookie.isHostOnly ? host == cookie.domain : HTTPCookieParser.domainMatches(host, cookie.domain))
                    && HTTPCookieParser.pathMatches(path, cookie.path) && (!cookie.isSecure || isSecure)
            }
        }.sorted { $0.path.count > $1.path.count }
    }

    /// The `Cookie` header value for `url`, or `nil` when there is nothing to send.
    public func cookieHeader(for url: URL) -> String? {
        let matching = cookies(for: url)
        return matching.isEmpty ? nil : matching.map { "\($0.name)=\($0.value)" }.joined(separator: "; ")
    }

    public func removeAll() { cookies.withLock { $0.removeAll() } }
}

/// `Set-Cookie` parsing (RFC 6265 section 5.2).
enum HTTPCookieParser {
    static func parse(_ header: String, from url: URL, now: Date) -> HTTPCookieRecord? {
        guard let host = url.host?.lowercased() else { return nil }
        let pieces = header.split(separator: ";", omittingEmptySubsequences: false).map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        guard let pair = pieces.first, let equals = pair.firstIndex(of: "=") else { return nil }
        let name = pair[..<equals].trimmingCharacters(in: .whitespaces)
        let value = pair[pair.index(after: equals)...].trimmingCharacters(in: .whitespaces)
        guard !name.isEmpty else { return nil }
        var cookie = HTTPCookieRecord(
            name: name,
            value: value,
            domain: host,
            isHostOnly: true,
            path: defaultPath(url.path),
            isSecure: false,
            isHTTPOnly: false,
            expiresDate: nil
        )
        var maxAge: Int?
        for attribute in pieces.dropFirst() {
            // An empty attribute or a bare "=" (found by fuzzing) names nothing: skip it.
            let parts = attribute.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard let first = parts.first else { continue }
            let key = first.lowercased()
            let argument = parts.count > 1 ? parts[1] : ""
            switch key {
            case "expires": if let date = parseDate(argument) { cookie.expiresDate = date }
            case "max-age": maxAge = Int(argument)
            case "domain":
                var domain = argument.lowercased()
                if domain.hasPrefix(".") { domain.removeFirst() }
                guard !domain.isEmpty else { continue }
                // A cookie for another site, or for a bare top-level label, is rejected.
                guard domainMatches(host, domain), domain.contains(".") || domain == host else { return nil }
                cookie.domain = domain
                cookie.isHostOnly = domain == host
            case "path": cookie.path = argument.hasPrefix("/") ? argument : defaultPath(url.path)
            case "secure": cookie.isSecure = true
            case "httponly": cookie.isHTTPOnly = true
            default: break
            }
        }
        if let maxAge { cookie.expiresDate = now.addingTimeInterval(TimeInterval(max(maxAge, 0) == 0 ? -1 : maxAge)) }
        if cookie.isSecure && url.scheme?.lowercased() != "https" { return nil }
        return cookie
    }

    /// The request path up to (not including) its last `/`, or `/`.
    static func defaultPath(_ path: String) -> String {
        guard path.hasPrefix("/"), let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return "/" }
        return String(path[..<slash])
    }

    static func domainMatches(_ host: String, _ domain: String) -> Bool {
        host == domain || (host.hasSuffix("." + domain) && !host.allSatisfy { $0.isNumber || $0 == "." })
    }

    static func pathMatches(_ requestPath: String, _ cookiePath: String) -> Bool {
        requestPath == cookiePath
            || (requestPath.hasPrefix(cookiePath)
                && (cookiePath.hasSuffix("/") || requestPath.dropFirst(cookiePath.count).hasPrefix("/")))
    }

    private static let dateFormats = [
        "EEE, dd MMM yyyy HH:mm:ss zzz", "EEEE, dd-MMM-yy HH:mm:ss zzz", "EEE MMM d HH:mm:ss yyyy",
        "EEE, dd-MMM-yyyy HH:mm:ss zzz",
    ]

    static func parseDate(_ text: String) -> Date? {
        for format in dateFormats {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = format
            if let date = formatter.date(from: text) { return date }
        }
        return nil
    }
}
