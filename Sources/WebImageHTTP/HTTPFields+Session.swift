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
            if let name = HTTPField.Name(commonlySpelled: name) ?? HTTPField.Name(name) {
                fields.append(HTTPField(name: name, value: value))
            }
        }
        self.init(fields)
    }
}

extension HTTPField.Name {
    /// The name of a field most responses carry, when `name` is spelled as servers send it
    /// (`Content-Length`, `ETag`): found by comparison, skipping the validation and lowercasing
    /// `init?(_:)` does for every other name (about a third of a response head's conversion).
    /// `nil` for any other name or spelling.
    init?(commonlySpelled name: String) {
        let known: HTTPField.Name? =
            switch name.utf8.count {
            case 4: name == "Date" ? .date : name == "ETag" ? .eTag : name == "Vary" ? .vary : nil
            case 6: name == "Server" ? .server : nil
            case 7: name == "Expires" ? .expires : nil
            case 10: name == "Connection" ? .connection : nil
            case 12: name == "Content-Type" ? .contentType : nil
            case 13:
                name == "Last-Modified"
                    ? .lastModified
                    : name == "Accept-Ranges" ? .acceptRanges : name == "Cache-Control" ? .cacheControl : nil
            case 14: name == "Content-Length" ? .contentLength : nil
            case 16: name == "Content-Encoding" ? .contentEncoding : nil
            case 17: name == "Transfer-Encoding" ? .transferEncoding : nil
            default: nil
            }
        guard let known else { return nil }
        self = known
    }
}

extension HTTPRequest.Method {
    /// AsyncHTTPClient's method of the same name.
    var nioMethod: NIOHTTP1.HTTPMethod { NIOHTTP1.HTTPMethod(rawValue: rawValue) }
}
