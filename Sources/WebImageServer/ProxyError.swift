/// Why the image proxy refused or failed a request: the HTTP status it answers with, a stable
/// code and a message in words that names the part of the request at fault. Rendered as
/// `{"error":{"code","message"}}`.
public struct ProxyError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The status the response carries: 400, 403, 404, 422, 502, 503 or 504 (499 when the
    /// client went away).
    public var status: Int
    /// Stable, machine-readable: `badURL`, `badOption`, `badSignature`, `sourceNotAllowed`,
    /// `sourceNotFound`, `notAnImage`, `limitExceeded`, `sourceFailed`, `timedOut`, `busy`,
    /// `shuttingDown`, `cancelled`.
    public var code: String
    public var message: String

    public init(status: Int, code: String, message: String) {
        self.status = status
        self.code = code
        self.message = message
    }

    public var description: String { "\(status) \(code): \(message)" }

    static func badURL(_ message: String) -> ProxyError { .init(status: 400, code: "badURL", message: message) }
    static func badOption(_ message: String) -> ProxyError { .init(status: 400, code: "badOption", message: message) }
    static func badSignature(_ message: String) -> ProxyError {
        .init(status: 403, code: "badSignature", message: message)
    }
    /// The client went away (or the work was stopped) before the answer was ready: nginx's
    /// 499, seen only in logs and metrics.
    static let cancelled = ProxyError(status: 499, code: "cancelled", message: "the request was cancelled")
    /// The server is stopping: the request was not started (503, retry elsewhere).
    static let shuttingDown = ProxyError(
        status: 503,
        code: "shuttingDown",
        message: "the server is shutting down; retry the request"
    )
    static func processingTimedOut(_ limit: Duration) -> ProxyError {
        .init(
            status: 504,
            code: "timedOut",
            message: "processing took longer than --processing-timeout \(limit / .seconds(1)) s"
        )
    }
    static func sourceNotAllowed(_ message: String) -> ProxyError {
        .init(status: 403, code: "sourceNotAllowed", message: message)
    }
}
