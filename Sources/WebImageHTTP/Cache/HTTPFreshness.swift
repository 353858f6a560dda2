import Foundation

/// The caching headers of the response an entry came from (RFC 9111), kept with its disk entry
/// so its freshness can be judged at each use and refreshed by a `304`.
public struct HTTPCachingHeaders: Sendable, Hashable {
    /// `Cache-Control`, several fields joined with `, `.
    public var cacheControl: String?
    /// `Expires`.
    public var expires: String?
    /// `Date`: when the origin generated the response.
    public var date: String?
    /// `Age`: seconds the response spent in caches before it reached us.
    public var age: String?
    /// `Vary`.
    public var vary: String?
    /// When the response arrived, on this process's clock.
    public var receivedDate: Date

    /// The headers as given; every header is optional.
    public init(
        cacheControl: String? = nil,
        expires: String? = nil,
        date: String? = nil,
        age: String? = nil,
        vary: String? = nil,
        receivedDate: Date
    ) {
        self.cacheControl = cacheControl
        self.expires = expires
        self.date = date
        self.age = age
        self.vary = vary
        self.receivedDate = receivedDate
    }

    /// The caching headers of `fields`, received at `receivedDate`.
    public init(fields: HTTPFields, receivedDate: Date) {
        func joined(_ name: HTTPField.Name) -> String? {
            let values = fields[values: name]
            return values.isEmpty ? nil : values.joined(separator: ", ")
        }
        self.init(
            cacheControl: joined(.cacheControl),
            expires: fields[values: .expires].first,
            date: fields[values: .date].first,
            age: fields[values: .age].first,
            vary: joined(.vary),
            receivedDate: receivedDate
        )
    }

    /// Whether a response with these headers may be stored at all (`no-store` and `Vary: *`
    /// say no): ``HTTPFreshness/isStorable`` without parsing its dates.
    public var isStorable: Bool { !CacheControlDirectives(cacheControl).noStore && !variesOnEverything }

    /// `Vary: *`: the response depends on more than the request's headers.
    var variesOnEverything: Bool {
        vary?.split(separator: ",").contains { $0.trimmingHTTPWhitespace() == "*" } ?? false
    }

    /// These headers as a `304` updates them (RFC 9111 §4.3.4): each header the `304` sends
    /// replaces the stored one, and the entry counts as received when the `304` was.
    public func updated(by notModified: HTTPCachingHeaders) -> HTTPCachingHeaders {
        HTTPCachingHeaders(
            cacheControl: notModified.cacheControl ?? cacheControl,
            expires: notModified.expires ?? expires,
            date: notModified.date ?? date,
            age: notModified.age,
            vary: notModified.vary ?? vary,
            receivedDate: notModified.receivedDate
        )
    }
}

/// How long a cached response may be used without asking its origin, and what it allows
/// after (RFC 9111 §4.2, for a private cache; RFC 5861's `stale-while-revalidate` and
/// `stale-if-error`).
public struct HTTPFreshness: Sendable, Hashable {
    /// Seconds the response stays fresh, counted from when the origin generated it:
    /// `max-age`, else `Expires` − `Date`, else 10 % of `Date` − `Last-Modified` (the heuristic
    /// browsers use), else 0. An invalid `max-age` or `Expires` counts as 0 (stale).
    public var lifetime: TimeInterval
    /// Whether ``lifetime`` came from `max-age` or `Expires` rather than the heuristic.
    public var isExplicit: Bool
    /// The response's age when it arrived: `Age`, or how far `Date` was behind our clock.
    public var initialAge: TimeInterval
    /// When the response arrived.
    public var receivedDate: Date
    /// `no-cache`: never used without revalidating.
    public var noCache: Bool
    /// `no-store`: never written to a cache.
    public var noStore: Bool
    /// `immutable`: not revalidated while fresh, even when the caller asks to refresh.
    public var immutable: Bool
    /// `must-revalidate`: never used stale, not even when the origin cannot be reached.
    public var mustRevalidate: Bool
    /// `stale-while-revalidate`: seconds past freshness in which the stale response is used at
    /// once while it is revalidated in the background.
    public var staleWhileRevalidate: TimeInterval
    /// `stale-if-error`: seconds past freshness in which the stale response stands in for a
    /// failed revalidation.
    public var staleIfError: TimeInterval
    /// `Vary: *`: the response may not be reused at all.
    public var variesOnEverything: Bool

    /// What to do with a stored response at some moment.
    public enum Use: Sendable, Hashable {
        /// Use it; no request.
        case fresh
        /// Use it now and revalidate it in the background (`stale-while-revalidate`).
        case staleWhileRevalidating
        /// Revalidate (or fetch again) before using it.
        case stale
    }

    /// The freshness of a response with `headers` and `lastModified` (its `Last-Modified`).
    public init(headers: HTTPCachingHeaders, lastModified: String?) {
        let directives = CacheControlDirectives(headers.cacheControl)
        let received = headers.receivedDate
        let date = headers.date.flatMap(HTTPDate.parse) ?? received
        let apparentAge = max(0, received.timeIntervalSince(date))
        let ageValue = headers.age.flatMap { Int($0.trimmingHTTPWhitespace()) }.map { max(0, $0) } ?? 0
        initialAge = max(apparentAge, TimeInterval(ageValue))
        receivedDate = received
        noCache = directives.noCache
        noStore = directives.noStore
        immutable = directives.immutable
        mustRevalidate = directives.mustRevalidate
        staleWhileRevalidate = directives.staleWhileRevalidate ?? 0
        staleIfError = directives.staleIfError ?? 0
        variesOnEverything = headers.variesOnEverything
        if directives.hasMaxAge {
            lifetime = directives.maxAge ?? 0
            isExplicit = true
        } else if let expires = headers.expires {
            lifetime = HTTPDate.parse(expires).map { max(0, $0.timeIntervalSince(date)) } ?? 0
            isExplicit = true
        } else if let modified = lastModified.flatMap(HTTPDate.parse), modified < date {
            lifetime = date.timeIntervalSince(modified) / 10
            isExplicit = false
        } else {
            lifetime = 0
            isExplicit = false
        }
    }

    /// The response's age at `now` (RFC 9111 §4.2.3, without the request's delay).
    public func age(at now: Date) -> TimeInterval { initialAge + max(0, now.timeIntervalSince(receivedDate)) }

    /// When it stops being fresh, on this process's clock (at `receivedDate` or before for
    /// `no-cache`).
    public var freshUntil: Date {
        noCache ? receivedDate : receivedDate.addingTimeInterval(lifetime - initialAge)
    }

    /// Whether it may be stored at all (`no-store` and `Vary: *` say no).
    public var isStorable: Bool { !noStore && !variesOnEverything }

    /// What to do with it at `now`.
    public func use(at now: Date) -> Use {
        guard isStorable else { return .stale }
        let staleness = age(at: now) - lifetime
        if !noCache, staleness < 0 { return .fresh }
        if !noCache, !mustRevalidate, staleness < staleWhileRevalidate { return .staleWhileRevalidating }
        return .stale
    }

    /// Whether it may stand in, stale, for a revalidation that failed at `now` without an
    /// answer from the origin (`disconnected`) or with a server error: never for `no-cache` or
    /// `must-revalidate`; when disconnected, always otherwise (RFC 9111 §4.2.4); for a server
    /// error, within `stale-if-error`.
    public func mayServeStale(afterFailureAt now: Date, disconnected: Bool) -> Bool {
        guard isStorable, !noCache, !mustRevalidate else { return false }
        return disconnected || age(at: now) - lifetime < staleIfError
    }
}

/// A `Cache-Control` value's directives this cache acts on, read in one pass without
/// building a table: names compared ASCII case-insensitively, values unquoted.
struct CacheControlDirectives {
    var noCache = false
    var noStore = false
    var immutable = false
    var mustRevalidate = false
    /// Present, and its value (`nil` when not a non-negative integer).
    var hasMaxAge = false
    var maxAge: TimeInterval?
    var staleWhileRevalidate: TimeInterval?
    var staleIfError: TimeInterval?

    init(_ header: String?) {
        guard let header else { return }
        var firstMaxAge: Substring?
        var maxAgeConflicts = false
        for item in header.split(separator: ",") {
            let parts = item.split(separator: "=", maxSplits: 1)
            guard let rawName = parts.first else { continue }
            let name = rawName.trimmingASCIISpaces()
            let value = parts.count > 1 ? parts[1].trimmingASCIISpaces().unquoted() : nil
            if name.equalsASCIILowercase("no-cache") {
                noCache = true
            } else if name.equalsASCIILowercase("no-store") {
                noStore = true
            } else if name.equalsASCIILowercase("immutable") {
                immutable = true
            } else if name.equalsASCIILowercase("must-revalidate") {
                mustRevalidate = true
            } else if name.equalsASCIILowercase("max-age") {
                // Given twice with different values it is invalid: read as 0 (stale).
                if hasMaxAge, firstMaxAge != (value ?? "") { maxAgeConflicts = true }
                if !hasMaxAge { firstMaxAge = value ?? "" }
                hasMaxAge = true
                maxAge = maxAgeConflicts ? nil : value.flatMap(Self.seconds)
            } else if name.equalsASCIILowercase("stale-while-revalidate") {
                staleWhileRevalidate = value.flatMap(Self.seconds)
            } else if name.equalsASCIILowercase("stale-if-error") {
                staleIfError = value.flatMap(Self.seconds)
            }
        }
    }

    /// A delta-seconds value; `nil` when not a non-negative integer. A value too large for the
    /// machine counts as the largest (RFC 9111 §1.2.2).
    static func seconds(_ value: Substring) -> TimeInterval? {
        guard !value.isEmpty, value.utf8.allSatisfy({ (48...57).contains($0) }) else { return nil }
        return TimeInterval(Int32(value) ?? .max)
    }
}

extension Substring {
    fileprivate func trimmingASCIISpaces() -> Substring {
        var trimmed = self
        while let first = trimmed.utf8.first, first == 0x20 || first == 0x09 { trimmed = trimmed.dropFirst() }
        while let last = trimmed.utf8.last, last == 0x20 || last == 0x09 { trimmed = trimmed.dropLast() }
        return trimmed
    }

    fileprivate func unquoted() -> Substring {
        guard count >= 2, utf8.first == 0x22, utf8.last == 0x22 else { return self }
        return dropFirst().dropLast()
    }

    /// Whether this equals `lowercase` (given in lowercase ASCII), ignoring ASCII case.
    fileprivate func equalsASCIILowercase(_ lowercase: StaticString) -> Bool {
        guard utf8.count == lowercase.utf8CodeUnitCount else { return false }
        return lowercase.withUTF8Buffer { expected in
            zip(utf8, expected).allSatisfy { byte, wanted in
                (byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte) == wanted
            }
        }
    }
}
