import Foundation

/// Whether to go on with a response once its head has arrived.
public enum HTTPResponseDisposition: Sendable {
    /// Receive the body.
    case allow
    /// Stop: the task completes with `cancelled`.
    case cancel
    /// Skip the body: the task completes at once, successfully, with the response head and no
    /// body (the connection is closed rather than drained). For answers not worth reading, such
    /// as an error status.
    case finish
}

/// The per-task callbacks of `URLSessionDataDelegate` / AFURLSessionManager. Every method has a
/// default; implement what you need. Called in order, one at a time, from the task's own
/// Swift task (never on an event loop); `async` methods may take their time.
public protocol HTTPSessionTaskDelegate: AnyObject, Sendable {
    /// The response head arrived. Default: `.allow`.
    func task(_ task: HTTPSessionTask, didReceive response: HTTPSession.Response) async -> HTTPResponseDisposition
    /// A body chunk arrived (in order). The chunk is a copy the delegate may keep as long as it likes.
    func task(_ task: HTTPSessionTask, didReceive data: Data)
    /// The server redirects; return the request to follow, a changed one, or `nil` to stop and
    /// deliver the redirect response itself. Default: follow.
    func task(
        _ task: HTTPSessionTask,
        willPerformRedirection response: HTTPSession.Response,
        newRequest: HTTPSession.Request
    ) async -> HTTPSession.Request?
    /// The server asks for HTTP authentication; return credentials, or `nil` to accept the 401.
    /// Default: the session's credential.
    func task(
        _ task: HTTPSessionTask,
        didReceiveChallenge challenge: HTTPAuthenticationChallenge
    ) async
        -> HTTPCredential?
    /// The response is about to be stored in the session's ``HTTPResponseCache``
    /// (URLSessionDataDelegate's `willCacheResponse`): return it, a changed one, or `nil` to
    /// store nothing. Default: store it as proposed.
    func task(_ task: HTTPSessionTask, willCacheResponse proposed: HTTPCachedResponse) -> HTTPCachedResponse?
    /// The task finished; `error` is `nil` on success.
    func task(_ task: HTTPSessionTask, didCompleteWith error: HTTPSessionError?, metrics: HTTPTaskMetrics)
}

extension HTTPSessionTaskDelegate {
    public func task(
        _ task: HTTPSessionTask,
        didReceive response: HTTPSession.Response
    ) async -> HTTPResponseDisposition {
        .allow
    }
    public func task(_ task: HTTPSessionTask, didReceive data: Data) {}
    public func task(
        _ task: HTTPSessionTask,
        willPerformRedirection response: HTTPSession.Response,
        newRequest: HTTPSession.Request
    ) async -> HTTPSession.Request? { newRequest }
    public func task(
        _ task: HTTPSessionTask,
        didReceiveChallenge challenge: HTTPAuthenticationChallenge
    ) async
        -> HTTPCredential?
    { task.session?.configuration.credential }
    public func task(_ task: HTTPSessionTask, willCacheResponse proposed: HTTPCachedResponse) -> HTTPCachedResponse? {
        proposed
    }
    public func task(_ task: HTTPSessionTask, didCompleteWith error: HTTPSessionError?, metrics: HTTPTaskMetrics) {}
}

/// A user name and password for HTTP basic authentication.
public struct HTTPCredential: Sendable, Hashable {
    public var user: String
    public var password: String

    public init(user: String, password: String) {
        self.user = user
        self.password = password
    }
}

/// A `401` with `WWW-Authenticate`: what the server asks for.
public struct HTTPAuthenticationChallenge: Sendable, Hashable {
    /// The scheme, such as `Basic`.
    public var scheme: String
    /// The realm, when given.
    public var realm: String?
    /// How many times credentials were already tried for this task.
    public var previousFailureCount: Int
    public var response: HTTPSession.Response
}

/// Timings of one task.
public struct HTTPTaskMetrics: Sendable, Hashable {
    /// When the task started.
    public var startDate: Date
    /// Until the response head arrived (the last one, after redirects).
    public var responseStartInterval: Duration?
    /// The whole task.
    public var duration: Duration
    /// How many redirects were followed.
    public var redirectCount: Int
    /// Body bytes received.
    public var bytesReceived: Int64
    /// Body bytes sent.
    public var bytesSent: Int64
    /// Whether the response came from the session's ``HTTPResponseCache`` without a request,
    /// or as the stored body a `304` confirmed (URLSessionTaskMetrics' `localCache` fetch type
    /// for the first). Default `false`.
    public var servedFromCache = false

    static var empty: HTTPTaskMetrics {
        HTTPTaskMetrics(startDate: Date(), duration: .zero, redirectCount: 0, bytesReceived: 0, bytesSent: 0)
    }
}

/// What happened to a task, as an `AsyncSequence` element (``HTTPSessionTask/events``).
public enum HTTPTaskEvent: Sendable {
    case redirect(from: HTTPSession.Response, to: HTTPSession.Request)
    case response(HTTPSession.Response)
    case data(Data)
    case uploadProgress(sent: Int64, expected: Int64?)
    case completed(HTTPSessionError?)
}

/// A task delegate that reads body chunks in place (the image downloader's progress reporter):
/// the session then makes no `Data` per chunk for it, and calls this instead of
/// `task(_:didReceive:)` (data).
package protocol HTTPSessionTaskByteDelegate: HTTPSessionTaskDelegate {
    /// A body chunk arrived (in order); `bytes` are valid only during the call.
    func task(_ task: HTTPSessionTask, didReceiveBytes bytes: UnsafeRawBufferPointer)
}
