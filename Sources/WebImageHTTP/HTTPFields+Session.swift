// The HTTP layer's public API uses swift-http-types (`HTTPRequest.Method`, `HTTPFields`,
// `HTTPField.Name`), as Hummingbird and AsyncHTTPClient users' code does; importing
// WebImageHTTP brings them.
@_exported import HTTPTypes
import NIOHTTP1

extension HTTPFields {
    /// Fields of `other` replace same-named fields here; the rest keep their order.
    func merging(_ other: HTTPFields) -> HTTPFields {
        guard !other.isEmpty else { return self }
        var merged = self
        merged.removeAll { field in other.contains(field.name) }
        merged.append(contentsOf: other)
        return merged
    }

    /// AsyncHTTPClient's response headers; a name HTTP does not allow is dropped.
    init(_ headers: HTTPHeaders) {
        self.init()
        for (name, value) in headers {
            if let name = HTTPField.Name(name) { append(HTTPField(name: name, value: value)) }
        }
    }
}

extension HTTPRequest.Method {
    /// AsyncHTTPClient's method of the same name.
    var nioMethod: NIOHTTP1.HTTPMethod { NIOHTTP1.HTTPMethod(rawValue: rawValue) }
}
