import Foundation

/// Why an HTTP task failed. `code` is stable to match on; the message names the URL.
public struct HTTPSessionError: Error, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        /// The URL is not an http(s) URL the session can load.
        case invalidURL
        /// The task was cancelled (by `cancel()`, the Swift Task, or a delegate's disposition).
        case cancelled
        /// A connect, read or overall timeout elapsed.
        case timedOut
        /// The host name did not resolve.
        case cannotFindHost
        /// The connection was refused or could not be made.
        case cannotConnect
        /// The connection closed before the response was complete (also a body shorter than its
        /// `Content-Length`).
        case connectionLost
        /// More redirects than the configuration allows.
        case tooManyRedirects
        /// A redirect led back to a URL already visited.
        case redirectLoop
        /// A redirect the session will not follow: a target that is not http(s), has an invalid
        /// port, or downgrades https to http. The message names the refused target.
        case redirectRefused
        /// The configuration's ``HTTPSession/Configuration/connectionValidator`` refused the
        /// address a connection reached. The message names the address and the reason.
        case connectionNotAllowed
        /// The status code is not acceptable (see ``HTTPResponseValidation``).
        case unacceptableStatusCode
        /// The content type is not acceptable (see ``HTTPResponseValidation``).
        case unacceptableContentType
        /// A response serializer could not turn the body into a value.
        case serializationFailed
        /// A request serializer could not encode the parameters.
        case requestSerializationFailed
        /// The server's certificate is not trusted (invalid chain, expired, wrong host).
        case serverCertificateUntrusted
        /// The server asked for a client certificate and refused the one given, or its absence
        /// (URLError's `clientCertificateRejected` / `clientCertificateRequired`).
        case clientCertificateRejected
        /// The cache policy allows only a stored response and there is none
        /// (``HTTPRequestCachePolicy/returnCacheDataDontLoad``; URLError's `resourceUnavailable`).
        case resourceUnavailable
        /// Reading or writing a local file failed.
        case fileError
        /// The response body is larger than the request's (or the session's) size limit; the
        /// task stopped reading there.
        case responseTooLarge
        /// Any other transport failure.
        case networkError
    }

    public let code: Code
    /// The URL of the request that failed.
    public let url: URL?
    /// What happened, naming the URL.
    public let message: String
    /// The response, when one arrived (validation errors always have it).
    public let response: HTTPSession.Response?
    /// The response body, for validation errors.
    public let body: Data?
    /// The error underneath, when there is one worth inspecting: a serializer's (the
    /// `DecodingError` of ``DecodableResponseSerializer``, with its coding path and context).
    public let underlying: (any Error & Sendable)?

    public init(
        _ code: Code,
        url: URL?,
        message: String,
        response: HTTPSession.Response? = nil,
        body: Data? = nil,
        underlying: (any Error & Sendable)? = nil
    ) {
        self.code = code
        self.url = url
        self.message = message
        self.response = response
        self.body = body
        self.underlying = underlying
    }

    /// The HTTP status, when a response arrived.
    public var statusCode: Int? { response?.statusCode }

    public var description: String { message }

    static func cancelled(_ url: URL?) -> HTTPSessionError {
        HTTPSessionError(.cancelled, url: url, message: "\(url?.absoluteString ?? "request"): cancelled")
    }
}
