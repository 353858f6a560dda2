import Foundation

/// Turns a method, URL, parameters and headers into a request (AFURLRequestSerialization).
public protocol RequestSerializer: Sendable {
    /// Builds the request; `parameters` go where the serializer puts them.
    func request(
        method: HTTPRequest.Method,
        url: URL,
        parameters: HTTPParameters?,
        headers: HTTPFields
    )
        throws(HTTPSessionError) -> HTTPSession.Request
}

/// Parameters as a query string for GET, HEAD and DELETE, else as an
/// `application/x-www-form-urlencoded` body (AFHTTPRequestSerializer).
public struct URLEncodedRequestSerializer: RequestSerializer {
    /// Per-request timeout; `nil` uses the session's.
    public var timeout: Duration?

    public init(timeout: Duration? = nil) { self.timeout = timeout }

    /// Methods whose parameters go in the query string (AFNetworking's
    /// `HTTPMethodsEncodingParametersInURI`): GET, HEAD and DELETE.
    public static let methodsEncodingParametersInURI: Set<HTTPRequest.Method> = [.get, .head, .delete]

    public func request(
        method: HTTPRequest.Method,
        url: URL,
        parameters: HTTPParameters?,
        headers: HTTPFields
    )
        throws(HTTPSessionError) -> HTTPSession.Request
    {
        var request = HTTPSession.Request(url: url, method: method, headers: headers, timeout: timeout)
        guard let parameters, !parameters.isEmpty else { return request }
        let query = QueryStringEncoding.queryString(from: parameters)
        if Self.methodsEncodingParametersInURI.contains(method) {
            guard var components = URLComponents(url: url, resolvingAgainstBaseURL: true) else {
                throw HTTPSessionError(.invalidURL, url: url, message: "\(url): cannot add a query string")
            }
            let existing = components.percentEncodedQuery.map { $0.isEmpty ? "" : $0 + "&" } ?? ""
            components.percentEncodedQuery = existing + query
            guard let withQuery = components.url else {
                throw HTTPSessionError(.invalidURL, url: url, message: "\(url): cannot add a query string")
            }
            request.url = withQuery
        } else {
            if !request.headers.contains(.contentType) {
                request.headers[.contentType] = "application/x-www-form-urlencoded"
            }
            request.body = .data(Data(query.utf8))
        }
        return request
    }
}

/// Parameters as a JSON body (`application/json`); GET, HEAD and DELETE use a query string
/// (AFJSONRequestSerializer).
public struct JSONRequestSerializer: RequestSerializer {
    public var timeout: Duration?
    public var writingOptions: JSONSerialization.WritingOptions

    public init(timeout: Duration? = nil, writingOptions: JSONSerialization.WritingOptions = [.sortedKeys]) {
        self.timeout = timeout
        self.writingOptions = writingOptions
    }

    public func request(
        method: HTTPRequest.Method,
        url: URL,
        parameters: HTTPParameters?,
        headers: HTTPFields
    )
        throws(HTTPSessionError) -> HTTPSession.Request
    {
        try bodyRequest(
            method: method,
            url: url,
            parameters: parameters,
            headers: headers,
            timeout: timeout,
            contentType: "application/json",
            formatName: "JSON"
        ) { object in try JSONSerialization.data(withJSONObject: object, options: writingOptions) }
    }
}

/// The shared shape of body serializers: GET, HEAD and DELETE put the parameters in the query
/// string; other methods get a body made by `encode` (from JSON-compatible objects) and, unless
/// the caller set one, `contentType`.
// shape: AFNetworking's request(withMethod:URLString:parameters:…) shape, one parameter per part of the request
func bodyRequest(
    method: HTTPRequest.Method,
    url: URL,
    parameters: HTTPParameters?,
    headers: HTTPFields,
    timeout: Duration?,
    contentType: String,
    formatName: String,
    encode: (Any) throws -> Data
) throws(HTTPSessionError) -> HTTPSession.Request {
    if URLEncodedRequestSerializer.methodsEncodingParametersInURI.contains(method) {
        return try URLEncodedRequestSerializer(timeout: timeout).request(
            method: method,
            url: url,
            parameters: parameters,
            headers: headers
        )
    }
    var request = HTTPSession.Request(url: url, method: method, headers: headers, timeout: timeout)
    guard let parameters else { return request }
    do {
        request.body = .data(try encode(HTTPParameter.dictionary(parameters).jsonObject))
    } catch {
        throw HTTPSessionError(
            .requestSerializationFailed,
            url: url,
            message: "\(url): cannot encode the parameters as \(formatName): \(error)"
        )
    }
    if !request.headers.contains(.contentType) { request.headers[.contentType] = contentType }
    return request
}

extension RequestSerializer where Self == URLEncodedRequestSerializer {
    /// Query string or form body (the default).
    public static var urlEncoded: URLEncodedRequestSerializer { URLEncodedRequestSerializer() }
}

extension RequestSerializer where Self == JSONRequestSerializer {
    /// A JSON body.
    public static var json: JSONRequestSerializer { JSONRequestSerializer() }
}
