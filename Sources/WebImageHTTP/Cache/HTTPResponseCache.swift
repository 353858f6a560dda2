import Foundation
@_spi(WebImageInternals) import WebImageCoders

/// How a request uses the session's ``HTTPResponseCache`` (URLRequest's `cachePolicy`).
public enum HTTPRequestCachePolicy: Sendable, Hashable {
    /// HTTP's rules (RFC 9111, a private cache): a fresh response is used without a request, a
    /// stale one with validators is revalidated (`If-None-Match`, `If-Modified-Since`; a `304`
    /// answers with the stored body), anything else is loaded.
    case useProtocolCachePolicy
    /// Always load; the answer is still stored when HTTP allows.
    case reloadIgnoringLocalCacheData
    /// A stored response, however old; else load.
    case returnCacheDataElseLoad
    /// A stored response, however old; else fail with `resourceUnavailable`, without a request.
    case returnCacheDataDontLoad
}

/// A response as the cache keeps it (CachedURLResponse).
public struct HTTPCachedResponse: Sendable, Hashable {
    /// The response head, as received (or as refreshed by a `304`).
    public var response: HTTPSession.Response
    /// The body (decompressed).
    public var data: Data
    /// When the response arrived.
    public var storedDate: Date
    /// The values the request had for each header the response's `Vary` names (lowercased
    /// names; a missing header is `""`): a later request must have the same to use it.
    public var varyingHeaders: [String: String]

    public init(
        response: HTTPSession.Response,
        data: Data,
        storedDate: Date = Date(),
        varyingHeaders: [String: String] = [:]
    ) {
        self.response = response
        self.data = data
        self.storedDate = storedDate
        self.varyingHeaders = varyingHeaders
    }

    /// Its freshness, by HTTP's rules.
    public var freshness: HTTPFreshness {
        HTTPFreshness(
            headers: HTTPCachingHeaders(fields: response.headers, receivedDate: storedDate),
            lastModified: response.headers[values: .lastModified].first
        )
    }

    /// This response as a `304` for it refreshes it (RFC 9111 §4.3.4): the `304`'s headers
    /// replace the stored ones of the same names, and it counts as received now.
    func refreshed(by notModified: HTTPSession.Response) -> HTTPCachedResponse {
        var refreshed = self
        for name in Set(notModified.headers.map(\.name)) where name != .contentLength {
            refreshed.response.headers[values: name] = notModified.headers[values: name]
        }
        refreshed.storedDate = Date()
        return refreshed
    }

    var byteCount: Int {
        data.count + response.headers.reduce(0) { $0 + $1.name.rawName.utf8.count + $1.value.utf8.count }
    }
}

/// The session's cache of responses to `GET` requests (URLCache's role): in memory, and on disk
/// when given a folder, each tier least recently used first out past its capacity.
///
/// Set it as ``HTTPSession/Configuration/urlCache``; requests use it by their
/// ``HTTPSession/Request/cachePolicy`` (default ``HTTPSession/Configuration/requestCachePolicy``).
/// Data and upload tasks use it; download tasks (which stream to a file) do not. A response is
/// stored when HTTP allows (status 200, 203, 300, 301, 404 or 410; no `no-store`; no `Vary: *`;
/// with an `Authorization` request header only if the response says `public`) and the task's
/// delegate does not decline it (``HTTPSessionTaskDelegate/task(_:willCacheResponse:)``).
/// Thread-safe.
public final class HTTPResponseCache: Sendable {
    private struct Entry {
        var cached: HTTPCachedResponse
        var lastUse: UInt64
    }

    private struct State {
        var entries: [String: Entry] = [:]
        var bytes = 0
        var clock: UInt64 = 0
    }

    /// The most bytes (bodies and headers) kept in memory.
    public let memoryCapacity: Int
    /// The most bytes kept on disk (0 without a ``directory``).
    public var diskCapacity: Int { disk?.capacity ?? 0 }
    /// Where responses are kept on disk; `nil`: memory only.
    public var directory: URL? { disk?.directory }
    private let state = Protected(State())
    private let disk: ResponseDiskStore?

    /// A cache of at most `memoryCapacity` bytes in memory (default 4 MiB, URLCache's default)
    /// and, with a `directory`, `diskCapacity` bytes there (default 20 MiB). A response larger
    /// than a twentieth of a tier's capacity is not kept in that tier (URLCache's rule). Files
    /// are read and written on a queue of the cache's own, never on the caller's thread.
    public init(memoryCapacity: Int = 4 * 1024 * 1024, diskCapacity: Int = 20 * 1024 * 1024, directory: URL? = nil) {
        self.memoryCapacity = max(0, memoryCapacity)
        disk = directory.flatMap { diskCapacity > 0 ? ResponseDiskStore(directory: $0, capacity: diskCapacity) : nil }
    }

    /// Bytes on disk once the writes queued so far are done (0 without a directory).
    public func currentDiskUsage() async -> Int { await disk?.size() ?? 0 }

    /// Bytes held now.
    public var currentMemoryUsage: Int { state.withLock { $0.bytes } }

    /// The stored response for `request` (a `GET`), from memory or else from disk (then kept in
    /// memory too), if its `Vary` headers match; `nil` otherwise. `headers` are the headers the
    /// request is sent with (the session's defaults included).
    public func cachedResponse(
        for request: HTTPSession.Request,
        headers: HTTPFields? = nil
    ) async -> HTTPCachedResponse? {
        guard request.method == .get else { return nil }
        let sent = headers ?? request.headers
        let key = Self.key(request.url)
        let inMemory = state.withLock { state -> HTTPCachedResponse? in
            guard var entry = state.entries[key] else { return nil }
            state.clock += 1
            entry.lastUse = state.clock
            state.entries[key] = entry
            return entry.cached
        }
        if let inMemory { return Self.matches(inMemory, sent) ? inMemory : nil }
        guard let fromDisk = await disk?.read(key) else { return nil }
        storeInMemory(fromDisk, key: key)
        return Self.matches(fromDisk, sent) ? fromDisk : nil
    }

    private static func matches(_ cached: HTTPCachedResponse, _ sent: HTTPFields) -> Bool {
        cached.varyingHeaders.allSatisfy { name, value in
            HTTPField.Name(name).map { sent[values: $0].joined(separator: ", ") } ?? "" == value
        }
    }

    /// Stores `cached` for `request` (replacing what was there), evicting the least recently
    /// used past the capacity. A response over a twentieth of the capacity is not stored.
    public func storeCachedResponse(_ cached: HTTPCachedResponse, for request: HTTPSession.Request) {
        guard request.method == .get else { return }
        let key = Self.key(request.url)
        storeInMemory(cached, key: key)
        disk?.write(cached, key: key)
    }

    private func storeInMemory(_ cached: HTTPCachedResponse, key: String) {
        let size = cached.byteCount
        state.withLock { state in
            if let old = state.entries.removeValue(forKey: key) { state.bytes -= old.cached.byteCount }
            guard size <= memoryCapacity / 20 else { return }
            state.clock += 1
            state.entries[key] = Entry(cached: cached, lastUse: state.clock)
            state.bytes += size
            while state.bytes > memoryCapacity,
                let oldest = state.entries.min(by: { $0.value.lastUse < $1.value.lastUse })
            {
                state.entries[oldest.key] = nil
                state.bytes -= oldest.value.cached.byteCount
            }
        }
    }

    /// Removes the stored response for `request`'s URL, in memory and on disk.
    public func removeCachedResponse(for request: HTTPSession.Request) {
        let key = Self.key(request.url)
        state.withLock { state in
            if let old = state.entries.removeValue(forKey: key) { state.bytes -= old.cached.byteCount }
        }
        disk?.remove(key)
    }

    /// Removes every stored response, in memory and on disk.
    public func removeAllCachedResponses() {
        state.withLock { $0 = State() }
        disk?.removeAll()
    }

    /// The URL without its fragment.
    private static func key(_ url: URL) -> String {
        let text = url.absoluteString
        return text.firstIndex(of: "#").map { String(text[..<$0]) } ?? text
    }

    /// Whether `response` to `request` may be stored (before the delegate is asked).
    static func mayStore(_ response: HTTPSession.Response, for request: HTTPSession.Request, sent: HTTPFields) -> Bool {
        guard request.method == .get, [200, 203, 300, 301, 404, 410].contains(response.statusCode) else { return false }
        let cached = HTTPCachedResponse(response: response, data: Data())
        guard cached.freshness.isStorable else { return false }
        if sent[.authorization] != nil {
            let control = response.headers[values: .cacheControl].joined(separator: ",").lowercased()
            return control.split(separator: ",").contains { $0.trimmingHTTPWhitespace() == "public" }
        }
        return true
    }

    /// The request's values for the headers `response`'s `Vary` names.
    static func varyingHeaders(of response: HTTPSession.Response, sent: HTTPFields) -> [String: String] {
        var values: [String: String] = [:]
        for name in response.headers[values: .vary].flatMap({ $0.split(separator: ",") }) {
            let name = name.trimmingHTTPWhitespace().lowercased()
            guard !name.isEmpty, let field = HTTPField.Name(name) else { continue }
            values[name] = sent[values: field].joined(separator: ", ")
        }
        return values
    }
}
