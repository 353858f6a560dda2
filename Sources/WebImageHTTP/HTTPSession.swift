import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
@_spi(WebImageInternals) import WebImageCoders

/// An HTTP client session on AsyncHTTPClient (AFURLSessionManager + AFHTTPSessionManager).
///
/// ```swift
/// let session = HTTPSession(baseURL: URL(string: "https://api.example.com/v1/"))
/// let (response, json) = try await session.get("users", parameters: ["page": 2], serializer: .json)
/// ```
///
/// Requests run on AsyncHTTPClient's event loops; delegate methods, completion handlers and
/// serializers run on the task's own Swift task, never on an event loop. Call ``shutdown()``
/// before dropping a session you made (the shared one lives for the process).
public final class HTTPSession: Sendable {
    /// The library version sent in `User-Agent`.
    public static let version = "0.1.0"

    /// A process-wide session with the default configuration.
    public static let shared = HTTPSession()

    /// Relative paths are resolved against it (AFNetworking's rule: a base URL without a trailing
    /// slash gets one, so `…/v1` + `users` is `…/v1/users`).
    public let baseURL: URL?
    public let configuration: Configuration
    /// Hears every task's events (AFURLSessionManager's session-level blocks). A task's own
    /// delegate answers decisions when it has one.
    public let delegate: (any HTTPSessionTaskDelegate)?
    /// The client for every request, except https requests under a policy that checks each
    /// connection against its host (``SecurityPolicy`` with a pinned server certificate): those
    /// get a client per host, made on first use (AsyncHTTPClient does not tell a connection's
    /// check which host it was made for). Made on the first request too: a session that sends
    /// none (a run of `file:` URLs, loads served from the cache) starts no event loop.
    private let sharedClientState = Protected<SharedClientState>(.notMade)
    /// Clients other than the shared one: one per host the security policy checks, and one per
    /// proxy ``Configuration/proxyRules`` chooses.
    private let hostClients = Protected<[ClientKey: HTTPClient]>([:])
    /// Tasks in flight per host, at most ``Configuration/maximumConnectionsPerHost``; the
    /// others wait by priority.
    let admission: HostAdmission
    /// Ends tasks whose requests receive nothing for ``Configuration/readTimeout``.
    let readTimeoutWatchdog: ReadTimeoutWatchdog

    private struct ClientKey: Hashable {
        var host: String?
        var proxy: Configuration.Proxy?
    }

    private enum SharedClientState {
        case notMade
        case made(HTTPClient)
        /// ``shutdown()`` came before the first request.
        case shutDown
    }
    /// The logger AsyncHTTPClient gets: `nil` (its own silent one) unless ours logs at debug
    /// or below. It logs nothing above debug, yet sets request metadata on the logger it is
    /// given for every request, which a real handler (swift-log's `StreamLogHandler`) formats
    /// each time: about 1 % of a decoded fetch's CPU.
    let clientLogger: Logger?

    /// The type of the configured group's loops when they are not SwiftNIO's POSIX ones, on which
    /// AsyncHTTPClient and `ClientBootstrap` cannot connect (the client would stop the process):
    /// every task then fails with ``unusableEventLoops(_:url:)``.
    let foreignEventLoop: String?

    /// `cannotConnect`: the configured ``Configuration/eventLoopGroup`` hands out `loopType`.
    static func unusableEventLoops(_ loopType: String, url: URL) -> HTTPSessionError {
        HTTPSessionError(
            .cannotConnect,
            url: url,
            message: "\(url): connections need SwiftNIO's POSIX event loops (MultiThreadedEventLoopGroup); "
                + "the session's eventLoopGroup hands out \(loopType)"
        )
    }

    /// A session; `baseURL` gains a trailing slash when its path has none. `logger` receives
    /// AsyncHTTPClient's request logs (default: none).
    public init(
        baseURL: URL? = nil,
        configuration: Configuration = .default,
        delegate: (any HTTPSessionTaskDelegate)? = nil,
        logger: Logger? = nil
    ) {
        self.delegate = delegate
        self.baseURL = baseURL.map(Self.withTerminalSlash)
        self.configuration = configuration
        clientLogger = logger.flatMap { $0.logLevel <= .debug ? $0 : nil }
        admission = HostAdmission(limit: configuration.maximumConnectionsPerHost)
        foreignEventLoop = configuration.eventLoopGroup.flatMap { group in
            let loop = group.next()
            return ClientBootstrap(validatingGroup: loop) == nil ? "\(type(of: loop))" : nil
        }
        readTimeoutWatchdog = ReadTimeoutWatchdog(
            timeout: configuration.readTimeout,
            eventLoopGroup: configuration.eventLoops
        )
    }

    deinit {
        // AsyncHTTPClient traps when a client is released without shutdown. A session that is
        // simply dropped shuts its clients down in the background; a client keeps itself alive
        // until that finishes. After an explicit `shutdown()` this fails harmlessly.
        if case .made(let client) = sharedClientState.withLock({ $0 }) { _ = client.shutdown() }
        for client in hostClients.withLock({ $0.values }) { _ = client.shutdown() }
    }

    /// Closes the session's connections. Tasks still running fail, and so do tasks started after.
    public func shutdown() async throws {
        let shared = sharedClientState.withLock { state -> HTTPClient? in
            guard case .made(let client) = state else {
                state = .shutDown
                return nil
            }
            return client
        }
        try await shared?.shutdown()
        for client in hostClients.withLock({ $0.values }) { try await client.shutdown() }
    }

    /// The shared client, made now when this is the first request. After a ``shutdown()`` that
    /// came first, a client shut down at once: the request fails as after any shutdown.
    private var sharedClient: HTTPClient {
        var closing: HTTPClient?
        let client = sharedClientState.withLock { state -> HTTPClient in
            if case .made(let client) = state { return client }
            let client = HTTPClient(
                eventLoopGroup: configuration.eventLoops,
                configuration: configuration.clientConfiguration(proxy: configuration.proxy)
            )
            if case .shutDown = state { closing = client }
            state = .made(client)
            return client
        }
        if let closing { _ = closing.shutdown() }
        return client
    }

    /// The client that sends a request for `url`: the shared one, or one for its host (the
    /// security policy checks connections per host) or its proxy (``Configuration/proxyRules``).
    func client(for url: URL) -> HTTPClient {
        let proxy = configuration.proxy ?? configuration.proxyRules?.proxy(for: url)
        let perHost = configuration.securityPolicy.checksConnectionsPerHost && url.scheme?.lowercased() == "https"
        let key = ClientKey(host: perHost ? url.host?.lowercased() : nil, proxy: proxy)
        guard key != ClientKey(host: nil, proxy: configuration.proxy) else { return sharedClient }
        return hostClients.withLock { clients in
            if let client = clients[key] { return client }
            let client = HTTPClient(
                eventLoopGroup: configuration.eventLoops,
                configuration: configuration.clientConfiguration(forHost: key.host, proxy: key.proxy)
            )
            clients[key] = client
            return client
        }
    }

    /// The URL for `path`: absolute URLs as they are, others resolved against ``baseURL``.
    public func url(for path: String) throws(HTTPSessionError) -> URL {
        let resolved: URL?
        if let absolute = URL(string: path), absolute.scheme != nil {
            resolved = absolute
        } else if let baseURL {
            resolved = URL(string: path, relativeTo: baseURL)?.absoluteURL
        } else {
            resolved = nil
        }
        guard let resolved else {
            throw HTTPSessionError(
                .invalidURL,
                url: nil,
                message: "\(path.isEmpty ? "(empty)" : path): not an http(s) URL"
            )
        }
        if let failure = resolved.httpValidationFailure {
            throw HTTPSessionError(.invalidURL, url: nil, message: "\(path): \(failure)")
        }
        return resolved
    }

    private static func withTerminalSlash(_ url: URL) -> URL {
        guard !url.path.isEmpty, !url.absoluteString.hasSuffix("/") else {
            return url.path.isEmpty ? url.appendingPathComponent("") : url
        }
        return url.appendingPathComponent("")
    }

    // MARK: Tasks

    /// A data task that collects the body. It starts suspended: call `resume()`. `completion`
    /// runs once, with the body, the response and any error, on ``Configuration/completionQueue``
    /// when there is one, within ``Configuration/completionGroup``.
    public func dataTask(
        with request: Request,
        delegate: (any HTTPSessionTaskDelegate)? = nil,
        completion: (@Sendable (Data, Response?, HTTPSessionError?) -> Void)? = nil
    ) -> HTTPSessionTask {
        dataTask(with: request, delegate: delegate, delivery: .configured, completion: completion)
    }

    /// Where a task's completion handler runs.
    package enum CompletionDelivery: Sendable {
        /// ``Configuration/completionQueue`` and ``Configuration/completionGroup``.
        case configured
        /// The thread that finished the task, before the task's Swift task ends: what the
        /// session's async methods and the image downloader need.
        case finishingThread
    }

    /// ``dataTask(with:delegate:completion:)`` with its completion delivered as `delivery` says.
    package func dataTask(
        with request: Request,
        delegate: (any HTTPSessionTaskDelegate)?,
        delivery: CompletionDelivery,
        completion: (@Sendable (Data, Response?, HTTPSessionError?) -> Void)?
    ) -> HTTPSessionTask {
        let body = CollectedBody()
        let delegate = effectiveDelegate(delegate)
        let configuration = configuration
        return HTTPSessionTask(
            request: request,
            session: self,
            runner: { [self] task in await run(task, delegate: delegate, collect: body) },
            onFinish: { task, error in
                let data = body.take()
                let metrics =
                    body.metrics
                    ?? .init(startDate: Date(), duration: .zero, redirectCount: 0, bytesReceived: 0, bytesSent: 0)
                delegate?.task(task, didCompleteWith: error, metrics: metrics)
                task.postCompletion(error: error, metrics: metrics, body: data)
                guard let completion else { return }
                Self.deliver(delivery, by: configuration) { completion(data, task.response, error) }
            }
        )
    }

    /// Runs a completion handler as `delivery` says: on ``Configuration/completionQueue`` (else
    /// here) within ``Configuration/completionGroup``, or here.
    private static func deliver(
        _ delivery: CompletionDelivery,
        by configuration: Configuration,
        _ handler: @escaping @Sendable () -> Void
    ) {
        guard delivery == .configured else { return handler() }
        switch (configuration.completionQueue, configuration.completionGroup) {
        case (let queue?, let group):
            queue.async(group: group, execute: handler)
        case (nil, let group?):
            group.enter()
            handler()
            group.leave()
        case (nil, nil):
            handler()
        }
    }

    /// A download task: the body streams to a temporary file beside `destination` (memory stays
    /// bounded), which is moved into place when the task succeeds with a 2xx status. With
    /// `resume`, a partial file left by an earlier attempt continues with `Range`/`If-Range`
    /// (the server may answer with the whole body instead). A failed task keeps its partial file
    /// (`<destination>.download`) only when it can resume: a 2xx response with a strong `ETag` or
    /// a `Last-Modified`, cut off; an error status's body is removed. It starts suspended.
    public func downloadTask(
        with request: Request,
        to destination: URL,
        resume: Bool = true,
        delegate: (any HTTPSessionTaskDelegate)? = nil,
        completion: (@Sendable (URL?, Response?, HTTPSessionError?) -> Void)? = nil
    ) -> HTTPSessionTask {
        downloadTask(
            with: request,
            to: destination,
            resume: resume,
            delegate: delegate,
            delivery: .configured,
            completion: completion
        )
    }

    /// ``downloadTask(with:to:resume:delegate:completion:)`` with its completion delivered as
    /// `delivery` says.
    private func downloadTask(
        with request: Request,
        to destination: URL,
        resume: Bool,
        delegate: (any HTTPSessionTaskDelegate)?,
        delivery: CompletionDelivery,
        completion: (@Sendable (URL?, Response?, HTTPSessionError?) -> Void)?
    ) -> HTTPSessionTask {
        let sink = FileBodySink(destination: destination)
        let delegate = effectiveDelegate(delegate)
        let configuration = configuration
        var request = request
        if resume { for (name, value) in sink.resumeHeaders(for: request) { request.headers[name] = value } }
        return HTTPSessionTask(
            request: request,
            session: self,
            runner: { [self] task in await run(task, delegate: delegate, collect: sink) },
            onFinish: { task, error in
                var outcome = error
                if outcome == nil, let response = task.response, !(200..<300).contains(response.statusCode) {
                    outcome = HTTPSessionError(
                        .unacceptableStatusCode,
                        url: response.url,
                        message: "\(response.url): unacceptable status \(response.statusCode)",
                        response: response
                    )
                }
                do {
                    try sink.close(success: outcome == nil)
                } catch {
                    outcome =
                        outcome
                        ?? HTTPSessionError(
                            .fileError,
                            url: task.originalRequest.url,
                            message:
                                "\(destination.path): cannot move the download into place: \(error.localizedDescription)"
                        )
                }
                delegate?.task(task, didCompleteWith: outcome, metrics: sink.metrics ?? .empty)
                task.postCompletion(
                    error: outcome,
                    metrics: sink.metrics ?? .empty,
                    file: outcome == nil ? destination : nil
                )
                guard let completion else { return }
                let error = outcome
                Self.deliver(delivery, by: configuration) {
                    completion(error == nil ? destination : nil, task.response, error)
                }
            }
        )
    }

    /// Downloads `request` to `destination` (see ``downloadTask(with:to:resume:delegate:completion:)``).
    public func download(
        _ request: Request,
        to destination: URL,
        resume: Bool = true
    ) async throws(HTTPSessionError)
        -> (URL, Response)
    {
        let holder = TaskHolder()
        let result: Result<(URL, Response), HTTPSessionError> = await withTaskCancellationHandler {
            await withHandOffContinuation { continuation in
                let task = downloadTask(
                    with: request,
                    to: destination,
                    resume: resume,
                    delegate: nil,
                    delivery: .finishingThread
                ) { url, response, error in
                    if let url, let response, error == nil {
                        continuation.resume(returning: .success((url, response)))
                    } else {
                        continuation.resume(returning: .failure(error ?? .cancelled(request.url)))
                    }
                }
                holder.set(task)
                task.resume()
            }
        } onCancel: {
            holder.cancel()
        }
        return try result.get()
    }

    /// An upload of the file at `fileURL` (streamed from disk) with `request`'s method, which
    /// defaults to POST when the request says GET. It starts suspended.
    public func uploadTask(
        with request: Request,
        fromFile fileURL: URL,
        delegate: (any HTTPSessionTaskDelegate)? = nil,
        completion: (@Sendable (Data, Response?, HTTPSessionError?) -> Void)? = nil
    ) -> HTTPSessionTask {
        var upload = request
        if upload.method == .get { upload.method = .post }
        upload.body = .file(fileURL)
        return dataTask(with: upload, delegate: delegate, completion: completion)
    }

    /// The task's delegate combined with the session's, when there is one.
    private func effectiveDelegate(_ taskDelegate: (any HTTPSessionTaskDelegate)?) -> (any HTTPSessionTaskDelegate)? {
        guard let sessionDelegate = delegate else { return taskDelegate }
        return CombinedTaskDelegate(task: taskDelegate, session: sessionDelegate)
    }

    /// Sends `request` and returns the body and response. Cancelling the Swift task cancels the
    /// request (the error is then `cancelled`).
    public func data(
        for request: Request,
        delegate: (any HTTPSessionTaskDelegate)? = nil
    ) async throws(HTTPSessionError)
        -> (Data, Response)
    {
        let outcome = Protected<Result<(Data, Response), HTTPSessionError>?>(nil)
        let task = dataTask(with: request, delegate: delegate, delivery: .finishingThread) { data, response, error in
            let result: Result<(Data, Response), HTTPSessionError> =
                if let error { .failure(error) } else if let response { .success((data, response)) } else {
                    .failure(.cancelled(request.url))
                }
            outcome.withLock { $0 = result }
        }
        await task.runToEnd()
        return try outcome.withLock { $0 ?? .failure(.cancelled(request.url)) }.get()
    }
}

/// The body a data task collects, shared between its runner and its completion.
final class CollectedBody: Sendable {
    private struct State {
        var data = Data()
        var metrics: HTTPTaskMetrics?
    }

    private let state = Protected(State())

    func reserve(_ count: Int) { state.withLock { $0.data.reserveCapacity(count) } }
    func append(_ bytes: UnsafeRawBufferPointer) { state.withLock { $0.data.append(contentsOf: bytes) } }
    func reset() { state.withLock { $0.data.removeAll(keepingCapacity: true) } }
    func take() -> Data { state.withLock { $0.data } }
    var metrics: HTTPTaskMetrics? {
        get { state.withLock { $0.metrics } }
        set { state.withLock { $0.metrics = newValue } }
    }
}

/// Holds a task so a cancellation handler that runs first (or later) can cancel it.
final class TaskHolder: Sendable {
    private struct State {
        var task: HTTPSessionTask?
        var cancelled = false
    }

    private let state = Protected(State())

    func set(_ task: HTTPSessionTask) {
        let cancelled = state.withLock {
            $0.task = task
            return $0.cancelled
        }
        if cancelled { task.cancel() }
    }

    func cancel() {
        let task = state.withLock {
            $0.cancelled = true
            return $0.task
        }
        task?.cancel()
    }
}

extension HTTPSession.Configuration {
    /// Where the session's connections and timers run: ``eventLoopGroup``, else SwiftNIO's shared
    /// group (AsyncHTTPClient's default).
    var eventLoops: any EventLoopGroup { eventLoopGroup ?? HTTPClient.defaultEventLoopGroup }
}
