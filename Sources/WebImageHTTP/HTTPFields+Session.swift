// The HTTP layer's public API uses swift-http-types (`HTTPRequest.Method`, `HTTPFields`,
// `HTTPField.Name`), as Hummingbird and AsyncHTTPClient users' code does; importing
// WebImageHTTP brings them.
@_exported import HTTPTypes
import NIOHTTP1

extension HTTPFields {
    /// Fields of `other` replace same-named fields here; the rest keep their order. Built as an
    /// array and wrapped once: `HTTPFields`' own appends each go through a generic
    /// `replaceSubrange`.
    func merging(_ other: HTTPFields) -> HTTPFields {
        guard !other.isEmpty else { return self }
        var fields: [HTTPField] = []
        fields.reserveCapacity(count + other.count)
        for field in self where !other.contains(field.name) { fields.append(field) }
        fields.append(contentsOf: other)
        return HTTPFields(fields)
    }

    /// AsyncHTTPClient's response headers; a name HTTP does not allow is dropped.
    init(_ headers: HTTPHeaders) {
        var fields: [HTTPField] = []
        fields.reserveCapacity(headers.count)
        for (name, value) in headers {
            if let name = HTTPField.Name(name) { fields.append(HTTPField(name: name, value: value)) }
        }
        self.init(fields)
    }
}

extension HTTPRequest.Method {
    /// AsyncHTTPClient's method of the same name.
    var nioMethod: NIOHTTP1.HTTPMethod { NIOHTTP1.HTTPMethod(rawValue: rawValue) }
}
