import Foundation
import NIOCore
import Tracing

extension HTTPSession {
    /// How a session connects, times out, redirects and what it sends by default.
    public struct Configuration: Sendable {
        /// How redirects are handled.
        public struct RedirectPolicy: Sendable, Hashable {
            /// Follow redirects at all. Default `true`.
            public var follow: Bool
            /// The most redirects one task follows. Default 10.
            public var maximumCount: Int
            /// Allow a redirect back to a URL already visited (still bounded by `maximumCount`).
            /// Default `false`: a cycle fails with `redirectLoop`.
            public var allowCycles: Bool
            /// Follow a redirect from https to plain http. Default `false`: such a redirect fails
            /// with `redirectRefused` (as browsers refuse mixed downgrades).
            public var allowsInsecureRedirects: Bool

            public init(
                follow: Bool = true,
                maximumCount: Int = 10,
                allowCycles: Bool = false,
                allowsInsecureRedirects: Bool = false
            ) {
                self.follow = follow
                self.maximumCount = maximumCount
                self.allowCycles = allowCycles
                self.allowsInsecureRedirects = allowsInsecureRedirects
            }

            public static let `default` = RedirectPolicy()
            public static let disabled = RedirectPolicy(follow: false)
        }

        /// The HTTP versions to use.
        public enum HTTPVersion: Sendable, Hashable {
            /// HTTP/1.1 only.
            case http1Only
            /// HTTP/2 over TLS when the server offers it (ALPN), else HTTP/1.1.
            case automatic
        }

        /// An HTTP proxy every request goes through.
        public struct Proxy: Sendable, Hashable {
            public var host: String
            public var port: Int
            public var credential: HTTPCredential?

            public init(host: String, port: Int, credential: HTTPCredential? = nil) {
                self.host = host
                self.port = port
                self.credential = credential
            }
        }

        /// Time allowed to open a connection. Default 10 s.
        public var connectTimeout: Duration = .seconds(10)
        /// The event loops the session's connections (its HTTP tasks' and stream tasks') and its
        /// timers run on; `nil` (the default): SwiftNIO's shared group, one loop per core, which
        /// AsyncHTTPClient uses too. A program whose cores go to decoding images (the
        /// `webimage fetch` tool) spends less on thread hand-offs with one loop for all of its
        /// connections. The session does not shut the group down: its owner does, after the
        /// session's ``HTTPSession/shutdown()``.
        public var eventLoopGroup: (any EventLoopGroup)?
        /// Time allowed without receiving anything (an idle timeout), as URLSession's
        /// `timeoutIntervalForRequest`: from a request's start (connecting included) to its
        /// response head, then between two reads of the body; each chunk of a request body sent
        /// counts too, and a suspended task's does not run. A task that times out fails with
        /// `timedOut`. Default 60 s.
        public var readTimeout: Duration = .seconds(60)
        /// Time allowed for one request and its response body; a request's own `timeout`
        /// wins. Default 60 s.
        public var requestTimeout: Duration = .seconds(60)
        /// Time allowed for a whole task, redirects and retries included. Default 7 days.
        public var resourceTimeout: Duration = .seconds(7 * 24 * 3600)
        /// Connections kept per host (HTTP/1.1), and tasks in flight per host (scheme, host and
        /// port) over any HTTP version, as URLSession's `httpMaximumConnectionsPerHost`: more
        /// tasks wait, the highest ``HTTPSessionTask/priority`` first. Default 6.
        public var maximumConnectionsPerHost = 6
        public var httpVersion: HTTPVersion = .automatic
        public var redirectPolicy: RedirectPolicy = .default
        /// Asked about every redirect target before it is followed: a reason refuses the
        /// redirect (`redirectRefused` with that reason), `nil` lets it through. Default `nil`.
        /// Called on the session's tasks; must not block.
        public var redirectValidator: (@Sendable (URL) -> String?)?
        /// Asked about the IP address (`"203.0.113.7"`, `"::1"`) of every new connection once it
        /// is established, before a request is written on it (for https, after the handshake):
        /// a reason closes the connection and fails the task (`connectionNotAllowed` with that
        /// reason), `nil` lets it through. This is the check that sees what a host name
        /// resolved to, so a name pointing at a private address cannot slip past URL checks.
        /// Through a proxy, the address is the proxy's. Called on an event loop; must not block.
        /// Default `nil`.
        public var connectionValidator: (@Sendable (String) -> String?)?
        /// Decompress gzip/deflate bodies. Default `true`.
        public var decompressesResponses = true
        /// The most body bytes a response may have, for requests that set no
        /// ``HTTPSession/Request/maximumBodySize``. `nil` (default): no limit.
        public var maximumResponseBodySize: Int64?
        /// An HTTP proxy for every request; when set, ``proxyRules`` is not consulted. Default `nil`.
        public var proxy: Proxy?
        /// The proxy per URL (scheme and host), e.g. from the environment with
        /// ``ProxyRules/environment(_:)``; used when ``proxy`` is `nil`. Default `nil`: direct.
        public var proxyRules: ProxyRules?
        /// TLS trust and pinning. Default: the system's trust store, host names checked.
        public var securityPolicy: SecurityPolicy = .default
        /// Where cookies are kept and read from; `nil` (default) sends and stores none. A request
        /// can opt out with ``HTTPSession/Request/handlesCookies``.
        public var cookieStore: HTTPCookieStore?
        /// Credentials for HTTP basic authentication challenges.
        public var credential: HTTPCredential?
        /// Headers every request gets unless it sets them itself: `User-Agent`,
        /// `Accept-Language` and `Accept-Encoding` by default.
        public var defaultHeaders: HTTPFields = Configuration.standardHeaders
        /// Where task completion handlers run (AFURLSessionManager's `completionQueue`). Default
        /// `nil`: on the thread that finished the task (an event loop or the session's own
        /// thread: keep such handlers short).
        public var completionQueue: DispatchQueue?
        /// A group every completion handler runs in (AFURLSessionManager's `completionGroup`):
        /// `completionGroup.wait()` or `notify` follows the handlers of the tasks started so far.
        /// Default `nil`.
        public var completionGroup: DispatchGroup?
        /// The ``HTTPSessionTask/taskDescription`` every new task starts with
        /// (AFURLSessionManager's `taskDescriptionForSessionTasks`): a way to tell this session's
        /// tasks apart in the task notifications. Default `nil`.
        public var taskDescription: String?
        /// Whether tasks post their notifications (``HTTPSessionTask/didResumeNotification``,
        /// ``HTTPSessionTask/didSuspendNotification``, ``HTTPSessionTask/didCompleteNotification``).
        /// Default `true`. Turn it off where nobody observes them: each post costs a lookup in
        /// `NotificationCenter` and, on completion, a `userInfo` dictionary.
        public var postsTaskNotifications = true
        /// The cache data tasks read and store responses in (URLSessionConfiguration's
        /// `urlCache`). Default `nil`: none.
        public var urlCache: HTTPResponseCache?
        /// How requests without a ``HTTPSession/Request/cachePolicy`` of their own use
        /// ``urlCache``. Default ``HTTPRequestCachePolicy/useProtocolCachePolicy``.
        public var requestCachePolicy: HTTPRequestCachePolicy = .useProtocolCachePolicy
        /// The tracer AsyncHTTPClient reports a span per request to (method, URL, status).
        /// Default: the tracer `InstrumentationSystem` was bootstrapped with when the
        /// configuration is made, or `nil` when tracing was never bootstrapped: then the client
        /// makes no span at all (it would otherwise make no-op ones, parsing each request's URL
        /// once more for their attributes).
        public var tracer: (any Tracer)? = Configuration.bootstrappedTracer

        public init() {}

        /// `InstrumentationSystem`'s tracer, `nil` for the no-op one it gives before a bootstrap.
        static var bootstrappedTracer: (any Tracer)? {
            let tracer = InstrumentationSystem.tracer
            return tracer is NoOpTracer ? nil : tracer
        }

        public static let `default` = Configuration()

        /// `User-Agent: swift-web-image/<version>`, `Accept-Language` from the environment's
        /// `LANG` (else `en`), and `Accept-Encoding: gzip, deflate`.
        public static var standardHeaders: HTTPFields {
            var headers = HTTPFields()
            headers[.userAgent] = "swift-web-image/\(HTTPSession.version)"
            headers[.acceptLanguage] = acceptLanguage
            headers[.acceptEncoding] = "gzip, deflate"
            return headers
        }

        private static var acceptLanguage: String {
            let locale = ProcessInfo.processInfo.environment["LANG"]?.split(separator: ".").first.map(String.init)
            guard let locale, !locale.isEmpty, locale != "C", locale != "POSIX" else { return "en;q=1" }
            let tag = locale.replacingOccurrences(of: "_", with: "-")
            let language = tag.split(separator: "-").first.map(String.init) ?? tag
            return tag == language ? "\(tag);q=1" : "\(tag);q=1, \(language);q=0.9"
        }
    }
}
