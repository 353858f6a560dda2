import Foundation

/// One answer of the proxy, independent of the HTTP server carrying it.
public struct ProxyResponse: Sendable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: Data
    /// The source's host, once the URL named one (for the request log).
    public var sourceHost: String?
    /// The error's code, for failures.
    public var errorCode: ProxyError.Code?

    public init(status: Int, headers: [(name: String, value: String)], body: Data) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// An error as JSON, `{"error":{"code","message"}}`, never cached for long.
    static func failure(_ error: ProxyError) -> ProxyResponse {
        let object: [String: Any] = ["error": ["code": error.code.rawValue, "message": error.message]]
        let body = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        var response = ProxyResponse(
            status: error.status,
            headers: [("Content-Type", "application/json"), ("Cache-Control", "no-cache")]
                + (error.status == 503 || error.status == 429 ? [("Retry-After", "1")] : [])
                + (error == .shuttingDown ? [("Connection", "close")] : []),
            body: body
        )
        response.errorCode = error.code
        return response
    }
}
