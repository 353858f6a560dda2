import Foundation
@_spi(WebImageInternals) import WebImageCoders

/// What the origin answers for one path: status, headers, body, and how it sends them.
public struct OriginRoute: Sendable {
    /// How the response is delivered.
    public struct Behavior: Sendable {
        /// Wait this long before sending the response head.
        public var delay: Duration = .zero
        /// Send the body in chunks of this many bytes (`nil`: all at once).
        public var chunkSize: Int?
        /// Pause between chunks.
        public var chunkInterval: Duration = .zero
        /// When set, each chunk after the first waits until the test has released it (then the
        /// interval, if any): chunk arrival the test controls, whatever the machine's load.
        public var chunkRelease: OriginChunkRelease?
        /// Never answer (until the server stops or the client goes away).
        public var stall = false
        /// Declare the full `Content-Length` but send only this many body bytes, then close.
        public var truncateAfter: Int?
        /// Hold the response head until the test opens this gate.
        public var gate: OriginGate?
        /// Omit `Content-Length` and use chunked transfer encoding.
        public var chunkedEncoding = false
        /// Answer 401 with `WWW-Authenticate: Basic` unless the request carries these credentials.
        public var requiredBasicAuth: (user: String, password: String)?
        /// A "not modified" answer declares the full body's `Content-Length` (as some servers do;
        /// a 304 has no body whatever its headers say).
        public var notModifiedDeclaresLength = false

        // shape: public memberwise init: each parameter is a documented behaviour with a default
        public init(
            delay: Duration = .zero,
            chunkSize: Int? = nil,
            chunkInterval: Duration = .zero,
            stall: Bool = false,
            truncateAfter: Int? = nil,
            gate: OriginGate? = nil,
            chunkedEncoding: Bool = false,
            requiredBasicAuth: (user: String, password: String)? = nil,
            notModifiedDeclaresLength: Bool = false,
            chunkRelease: OriginChunkRelease? = nil
        ) {
            self.chunkRelease = chunkRelease
            self.notModifiedDeclaresLength = notModifiedDeclaresLength
            self.requiredBasicAuth = requiredBasicAuth
            self.delay = delay
            self.chunkSize = chunkSize
            self.chunkInterval = chunkInterval
            self.stall = stall
            self.truncateAfter = truncateAfter
            self.gate = gate
            self.chunkedEncoding = chunkedEncoding
        }
    }

    public var status: Int
    /// Response headers, in order (`Content-Length` is added unless chunked).
    public var headers: [(String, String)]
    public var body: Data
    public var behavior: Behavior

    public init(status: Int = 200, headers: [(String, String)] = [], body: Data = Data(), behavior: Behavior = .init())
    {
        self.status = status
        self.headers = headers
        self.body = body
        self.behavior = behavior
    }

    /// A 200 response with `body`, its content type and, when given, a `Cache-Control` value
    /// (without one, and with no `Last-Modified`, a cache must revalidate the response at each use).
    public static func data(
        _ body: Data,
        contentType: String,
        cacheControl: String? = nil,
        behavior: Behavior = .init()
    ) -> OriginRoute {
        var headers = [("Content-Type", contentType)]
        if let cacheControl { headers.append(("Cache-Control", cacheControl)) }
        return OriginRoute(status: 200, headers: headers, body: body, behavior: behavior)
    }

    /// A redirect to `location` (absolute or relative).
    public static func redirect(to location: String, status: Int = 302) -> OriginRoute {
        OriginRoute(status: status, headers: [("Location", location)])
    }
}

/// A one-shot gate a test opens to let held responses proceed.
public final class OriginGate: Sendable {
    private let state = Protected(false)

    public init() {}

    /// Lets every held and future response through.
    public func open() { state.withLock { $0 = true } }

    public var isOpen: Bool { state.withLock { $0 } }
}

/// Lets a chunked response send each chunk after the first only when the test releases it
/// (``OriginRoute/Behavior/chunkRelease``).
public final class OriginChunkRelease: Sendable {
    private let released = Protected(0)

    public init() {}

    /// Lets one more chunk go.
    public func release() { released.withLock { $0 += 1 } }

    /// Chunks released so far.
    public var releasedCount: Int { released.withLock { $0 } }
}
