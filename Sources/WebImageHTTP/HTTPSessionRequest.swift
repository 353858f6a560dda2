import Foundation

extension HTTPSession {
    /// A request to send: URL, method, headers, body and timeout.
    public struct Request: Sendable, Hashable {
        /// Where the body comes from.
        public enum Body: Sendable, Hashable {
            /// Bytes in memory.
            case data(Data)
            /// A file, streamed from disk.
            case file(URL)
        }

        public var url: URL
        public var method: HTTPRequest.Method
        public var headers: HTTPFields
        public var body: Body?
        /// Time to wait for the whole exchange; `nil` uses the session's request timeout.
        public var timeout: Duration?
        /// Send and store cookies when the session has a cookie store. Default `true`.
        public var handlesCookies = true
        /// The most body bytes to accept (after decompression); past it the task stops reading and
        /// fails with ``HTTPSessionError/Code/responseTooLarge``. A `Content-Length` over it fails
        /// before the body is read. `nil` (default): the session's
        /// ``HTTPSession/Configuration/maximumResponseBodySize``.
        public var maximumBodySize: Int64?
        /// How this request uses the session's ``HTTPSession/Configuration/urlCache``; `nil`
        /// (default): the session's ``HTTPSession/Configuration/requestCachePolicy``.
        public var cachePolicy: HTTPRequestCachePolicy?

        public init(
            url: URL,
            method: HTTPRequest.Method = .get,
            headers: HTTPFields = [:],
            body: Body? = nil,
            timeout: Duration? = nil
        ) {
            self.url = url
            self.method = method
            self.headers = headers
            self.body = body
            self.timeout = timeout
        }

        /// Sets `Authorization: Basic …` for `username` and `password`.
        public mutating func setBasicAuthorization(username: String, password: String) {
            headers[.authorization] = "Basic " + Data("\(username):\(password)".utf8).base64EncodedString()
        }

        /// Sets `Authorization: Bearer TOKEN`.
        public mutating func setBearerAuthorization(_ token: String) {
            headers[.authorization] = "Bearer \(token)"
        }
    }

    /// What the server answered: status, headers and the URL after redirects.
    public struct Response: Sendable, Hashable {
        /// The URL that answered (after any redirects).
        public var url: URL
        public var statusCode: Int
        public var headers: HTTPFields {
            didSet { contentLength = Self.contentLength(in: headers) }
        }
        /// The protocol that carried the response: `HTTP/1.1` or `HTTP/2`.
        public var httpVersion: String
        /// `headers`' `Content-Length`, read once: a download asks for it several times.
        private var contentLength: Int64?

        public init(url: URL, statusCode: Int, headers: HTTPFields, httpVersion: String = "HTTP/1.1") {
            self.url = url
            self.statusCode = statusCode
            self.headers = headers
            self.httpVersion = httpVersion
            contentLength = Self.contentLength(in: headers)
        }

        /// `Content-Length`, when the server sent a valid one.
        public var expectedContentLength: Int64? { contentLength }

        private static func contentLength(in headers: HTTPFields) -> Int64? {
            // The first field by that name, found without collecting them all.
            guard let value = headers.first(where: { $0.name == .contentLength })?.value else { return nil }
            let digits = value.utf8.drop { $0 == 0x20 || $0 == 0x09 }.prefix { $0 != 0x20 && $0 != 0x09 }
            guard let length = Int64(Substring(digits)), length >= 0 else { return nil }
            return length
        }

        /// The validator a request continuing this response's body sends in `If-Range`: its
        /// strong `ETag`, else its `Last-Modified`; `nil` when it has neither (`If-Range` takes
        /// no weak ETag).
        public var rangeValidator: String? {
            let etag = headers[values: .eTag].first.flatMap { $0.hasPrefix("W/") ? nil : $0 }
            return etag ?? headers[values: .lastModified].first
        }

        /// The media type of `Content-Type` without parameters, lowercased (`image/png`).
        public var mimeType: String? {
            guard let value = headers.first(where: { $0.name == .contentType })?.value else { return nil }
            let essence = value[..<(value.utf8.firstIndex(of: UInt8(ascii: ";")) ?? value.endIndex)]
                .trimmingHTTPWhitespace()
            guard !essence.isEmpty else { return nil }
            return essence.utf8.contains { $0 >= 0x41 && $0 <= 0x5A || $0 >= 0x80 } ? essence.lowercased() : essence
        }

        /// The `charset` parameter of `Content-Type`, lowercased.
        public var textEncodingName: String? {
            guard let contentType = headers[values: .contentType].first else { return nil }
            for parameter in contentType.split(separator: ";").dropFirst() {
                let parts = parameter.split(separator: "=", maxSplits: 1)
                if parts.count == 2, parts[0].trimmingHTTPWhitespace().lowercased() == "charset" {
                    return parts[1].trimmingCharacters(in: CharacterSet(charactersIn: " \"")).lowercased()
                }
            }
            return nil
        }
    }
}
