import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdHTTP2
import HummingbirdTLS
import Logging
import NIOCore
import NIOSSL
import ServiceLifecycle
@_spi(WebImageInternals) import WebImageCoders

/// A local HTTP origin on 127.0.0.1 with scripted routes, for tests, the demo and benchmarks.
///
/// ```swift
/// let origin = try await OriginServer.start()
/// origin.setRoute("/a.png", .data(png, contentType: "image/png"))
/// // … load origin.url("/a.png") …
/// #expect(origin.requestCount(for: "/a.png") == 1)
/// await origin.stop()
/// ```
///
/// Unscripted paths answer 404, except `/echo`, which returns the request it received as JSON
/// (`method`, `path`, `query`, `headers`, `body` in base64). Thread-safe.
public final class OriginServer: Sendable {
    /// The port the server listens on (chosen by the system).
    public let port: Int
    private let state: OriginState
    private let serviceGroup: ServiceGroup
    private let task: Task<Void, any Error>

    private init(port: Int, scheme: String, state: OriginState, serviceGroup: ServiceGroup, task: Task<Void, any Error>)
    {
        self.port = port
        self.scheme = scheme
        self.state = state
        self.serviceGroup = serviceGroup
        self.task = task
    }

    /// TLS for an origin: the certificate and key (PEM), and whether to offer HTTP/2 (ALPN).
    public struct TLS: Sendable {
        public var certificatePEM: String
        public var privateKeyPEM: String
        public var http2: Bool
        /// Offer TLS 1.1 at most (an old server), to test that clients refuse it.
        public var onlyLegacyTLS: Bool
        /// CA certificates (PEM) a client's certificate must be issued by: with them the origin
        /// asks every client for a certificate and refuses the handshake without a valid one
        /// (mutual TLS). `nil` (default): no client certificate is asked for.
        public var clientCertificateAuthoritiesPEM: String?

        public init(
            certificatePEM: String,
            privateKeyPEM: String,
            http2: Bool = false,
            onlyLegacyTLS: Bool = false,
            clientCertificateAuthoritiesPEM: String? = nil
        ) {
            self.certificatePEM = certificatePEM
            self.privateKeyPEM = privateKeyPEM
            self.http2 = http2
            self.onlyLegacyTLS = onlyLegacyTLS
            self.clientCertificateAuthoritiesPEM = clientCertificateAuthoritiesPEM
        }

        /// The server side's TLS configuration: the certificate chain and key, and the client
        /// certificate check when authorities are given.
        public func serverConfiguration() throws -> TLSConfiguration {
            var configuration = TLSConfiguration.makeServerConfiguration(
                certificateChain: try NIOSSLCertificate.fromPEMBytes(Array(certificatePEM.utf8)).map {
                    .certificate($0)
                },
                privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(privateKeyPEM.utf8), format: .pem))
            )
            if let authorities = clientCertificateAuthoritiesPEM {
                configuration.certificateVerification = .noHostnameVerification
                configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(authorities.utf8)))
            }
            return configuration
        }
    }

    /// `https` when started with TLS, else `http`.
    public let scheme: String

    /// Starts a server on 127.0.0.1 on a free port and returns once it accepts connections.
    /// With `tls` it speaks HTTPS (and HTTP/2 when asked).
    public static func start(tls: TLS? = nil) async throws -> OriginServer {
        let state = OriginState()
        let (portStream, portContinuation) = AsyncStream.makeStream(of: Int.self)
        var logger = Logger(label: "webimage.origin")
        logger.logLevel = .critical
        let server: HTTPServerBuilder
        if let tls {
            var configuration = try tls.serverConfiguration()
            if tls.onlyLegacyTLS {
                configuration.minimumTLSVersion = .tlsv1
                configuration.maximumTLSVersion = .tlsv11
            }
            if tls.http2 {
                configuration.applicationProtocols = ["h2", "http/1.1"]
                server = try .http2Upgrade(tlsConfiguration: configuration, configuration: .init())
            } else {
                server = try .tls(.http1(), tlsConfiguration: configuration)
            }
        } else {
            server = .http1(configuration: .init(additionalChannelHandlers: [HangUpCounter(state: state)]))
        }
        let app = Application(
            responder: OriginResponder(state: state),
            server: server,
            configuration: .init(address: .hostname("127.0.0.1", port: 0), serverName: nil),
            onServerRunning: { channel in
                portContinuation.yield(channel.localAddress?.port ?? 0)
                portContinuation.finish()
            },
            logger: logger
        )
        let serviceGroup = ServiceGroup(configuration: .init(services: [app], logger: logger))
        let task = Task { try await serviceGroup.run() }
        var port = 0
        for await value in portStream { port = value }
        guard port > 0 else {
            await serviceGroup.triggerGracefulShutdown()
            _ = await task.result
            throw OriginError.didNotStart
        }
        return OriginServer(
            port: port,
            scheme: tls == nil ? "http" : "https",
            state: state,
            serviceGroup: serviceGroup,
            task: task
        )
    }

    /// `http(s)://127.0.0.1:PORT` followed by `path` (which starts with `/`).
    public func url(_ path: String, host: String = "127.0.0.1") -> URL {
        URL(string: "\(scheme)://\(host):\(port)\(path)")!
    }

    /// Scripts the answer for `path` (the part before any `?`).
    public func setRoute(_ path: String, _ route: OriginRoute) {
        state.routes.withLock { $0[path] = route }
    }

    /// Requests received for `path` so far.
    public func requestCount(for path: String) -> Int {
        state.requests.withLock { $0.filter { $0.path == path }.count }
    }

    /// Every request received so far, in arrival order (while ``recordsRequests`` is on).
    public var requests: [OriginRecordedRequest] { state.requests.withLock { $0 } }

    /// Whether each request is kept for ``requests`` and ``requestCount(for:)``. Default `true`;
    /// long runs (the soak) turn it off so the log does not grow, and read ``totalRequestCount``.
    public var recordsRequests: Bool {
        get { state.recording.withLock { $0 } }
        set { state.recording.withLock { $0 = newValue } }
    }

    /// Requests received so far, recorded or not.
    public var totalRequestCount: Int { state.total.withLock { $0 } }

    /// The most requests that were being answered at the same time.
    public var maxConcurrentRequests: Int { state.concurrency.withLock { $0.max } }

    /// Requests being answered right now.
    public var currentConcurrentRequests: Int { state.concurrency.withLock { $0.current } }

    /// Connections (plain http) whose client closed its side, e.g. a cancelled download.
    public var connectionsClosedByClient: Int { state.hangUps.withLock { $0 } }

    /// Responses whose body could not be finished because the client went away.
    public var abandonedResponses: Int { state.abandoned.withLock { $0 } }

    /// Stops the server: stalled and held responses end, connections close.
    ///
    /// A graceful shutdown, not a cancellation: cancelling the serving task while an accepted
    /// connection is still queued traps in NIO ("Deinited NIOAsyncWriter without calling
    /// finish()"). Only if the shutdown has not finished after `gracePeriod` is the task cancelled.
    public func stop(gracePeriod: Duration = .seconds(10)) async {
        state.stopping.withLock { $0 = true }
        await serviceGroup.triggerGracefulShutdown()
        let task = self.task
        let watchdog = Task {
            try await Task.sleep(for: gracePeriod)
            task.cancel()
        }
        _ = await task.result
        watchdog.cancel()
    }
}

enum OriginError: Error {
    case didNotStart
    case stopped
}

/// Shared state of one origin.
final class OriginState: Sendable {
    let routes = Protected<[String: OriginRoute]>([:])
    let requests = Protected<[OriginRecordedRequest]>([])
    let recording = Protected(true)
    let total = Protected(0)
    let concurrency = Protected<(current: Int, max: Int)>((0, 0))
    let abandoned = Protected(0)
    let hangUps = Protected(0)
    let stopping = Protected(false)

    var isStopping: Bool { stopping.withLock { $0 } }

    func enter() {
        concurrency.withLock {
            $0.current += 1
            $0.max = Swift.max($0.max, $0.current)
        }
    }

    func leave() { concurrency.withLock { $0.current -= 1 } }

    /// Sleeps for `duration` in small steps, ending early when the server stops.
    func pause(_ duration: Duration) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now + duration
        while clock.now < deadline {
            guard !isStopping, !Task.isCancelled else { throw OriginError.stopped }
            try await Task.sleep(for: min(.milliseconds(10), deadline - clock.now))
        }
    }

    /// Waits until `condition` holds or the server stops.
    func wait(until condition: @Sendable () -> Bool) async throws {
        while !condition() {
            guard !isStopping, !Task.isCancelled else { throw OriginError.stopped }
            try await Task.sleep(for: .milliseconds(5))
        }
    }
}

/// Counts clients closing their side of a connection.
final class HangUpCounter: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    let state: OriginState

    init(state: OriginState) { self.state = state }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event { state.hangUps.withLock { $0 += 1 } }
        context.fireUserInboundEventTriggered(event)
    }
}
