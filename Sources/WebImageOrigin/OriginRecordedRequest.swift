import Foundation

/// A request the origin received, as the test sees it.
public struct OriginRecordedRequest: Sendable {
    public var method: String
    /// The request target exactly as sent (`/a?b`, or `host:port` for CONNECT).
    public var target: String
    /// The path without the query.
    public var path: String
    /// The raw query string, without `?` (empty when none).
    public var query: String
    /// Header names are lowercased; repeated headers keep every value.
    public var headers: [(name: String, value: String)]
    public var body: Data

    /// The first value of header `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        headers.first { $0.name == name.lowercased() }?.value
    }

    /// A JSON description, which the `/echo` route returns.
    var json: Data {
        let object: [String: Any] = [
            "method": method, "path": path, "query": query,
            "headers": Dictionary(headers.map { ($0.name, $0.value) }, uniquingKeysWith: { "\($0), \($1)" }),
            "body": body.base64EncodedString(),
        ]
        return (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
    }
}
