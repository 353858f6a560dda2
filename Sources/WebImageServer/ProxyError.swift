/// Why the image proxy refused or failed a request: a stable code, the HTTP status that code
/// answers with, and a message in words that names the part of the request at fault. Rendered
/// as `{"error":{"code","message"}}`.
public struct ProxyError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The status the response carries: the code's (``Code/status``).
    public var status: Int
    /// Stable and machine-readable; its raw value is the `code` in the JSON body.
    public enum Code: String, Sendable, Hashable, CaseIterable {
        /// The path is not a proxy URL, or its source is not a URL.
        case badURL
        /// A processing option is unknown or its value is invalid.
        case badOption
        /// The signature is missing or does not match.
        case badSignature
        /// The source's scheme, host or address is not allowed.
        case sourceNotAllowed
        /// The source's origin refused the request (401, 403).
        case sourceForbidden
        /// The source does not exist.
        case sourceNotFound
        /// The source is not an image we can decode.
        case notAnImage
        /// The result could not be encoded in the format asked for.
        case encodeFailed
        /// Over a size, resolution, memory or frame limit.
        case limitExceeded
        /// The source could not be fetched.
        case sourceFailed
        /// Fetching or processing took longer than allowed.
        case timedOut
        /// Every worker is busy and the queue is full.
        case busy
        /// The server is stopping.
        case shuttingDown
        /// The client went away first.
        case cancelled
        /// The fallback image could not be loaded.
        case fallbackFailed
        /// The watermark image could not be loaded.
        case watermarkFailed
        /// A server setting is invalid.
        case badConfiguration
        /// No such endpoint.
        case notFound
        /// The method is not GET or HEAD.
        case methodNotAllowed
        /// The URL's `expires` time has passed.
        case expired
        /// A codec failed the start-up self-test.
        case codecSelfTestFailed
    }

    /// Why, for machines.
    public var code: Code
    /// Why, in words that name the part of the request at fault.
    public var message: String

    /// An error answered with its code's status.
    public init(_ code: Code, _ message: String) {
        self.status = code.status
        self.code = code
        self.message = message
    }

    /// An error answered with `status`, whatever its code's.
    @available(*, deprecated, message: "the status follows from the code: use init(_:_:)")
    public init(status: Int, code: Code, message: String) {
        self.status = status
        self.code = code
        self.message = message
    }

    public var description: String { "\(status) \(code): \(message)" }

    static func badURL(_ message: String) -> ProxyError { .init(.badURL, message) }
    static func badOption(_ message: String) -> ProxyError { .init(.badOption, message) }
    static func badSignature(_ message: String) -> ProxyError { .init(.badSignature, message) }
    /// The client went away (or the work was stopped) before the answer was ready: nginx's
    /// 499, seen only in logs and metrics.
    static let cancelled = ProxyError(.cancelled, "the request was cancelled")
    /// The server is stopping: the request was not started (503, retry elsewhere).
    static let shuttingDown = ProxyError(.shuttingDown, "the server is shutting down; retry the request")
    static func processingTimedOut(_ limit: Duration) -> ProxyError {
        .init(.timedOut, "processing took longer than --processing-timeout \(limit / .seconds(1)) s")
    }
    static func sourceNotAllowed(_ message: String) -> ProxyError { .init(.sourceNotAllowed, message) }
}

extension ProxyError.Code {
    /// The HTTP status an error of this code is answered with (imgproxy's where it has one).
    public var status: Int {
        switch self {
        case .badURL, .badOption: 400
        case .badSignature, .sourceNotAllowed, .sourceForbidden: 403
        case .sourceNotFound, .notFound, .expired: 404
        case .methodNotAllowed: 405
        case .notAnImage, .limitExceeded: 422
        case .busy: 429
        case .cancelled: 499
        case .encodeFailed, .fallbackFailed, .badConfiguration: 500
        case .sourceFailed, .watermarkFailed: 502
        case .shuttingDown, .codecSelfTestFailed: 503
        case .timedOut: 504
        }
    }
}
