import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

extension HTTPSession {
    /// One request of a task (the first, or one after a redirect or a challenge) with its
    /// deadline: its own timeout or the task's, whichever ends first. AsyncHTTPClient enforces it
    /// until the head; each body chunk checks it after (and the read timeout ends a body that
    /// stalls outright). No timers, so no event-loop wake-ups.
    struct Hop: Sendable {
        var request: Request
        var timeout: Duration
        var requestEnd: ContinuousClock.Instant
        var deadline: ContinuousClock.Instant
        var resourceTimeout: Duration
        var bodyLimit: Int64?
        /// The task's read timeout (`nil` for a response delivered from the cache).
        var watch: ReadTimeoutWatchdog.Watch?

        /// The error for a hop past its deadline, naming the timeout that ended it.
        func expired() -> HTTPSessionError {
            let url = request.url
            return HTTPSessionError(
                .timedOut,
                url: url,
                message: deadline == requestEnd
                    ? "\(url): no complete response within \(timeout)"
                    : "\(url): the task took longer than \(resourceTimeout)"
            )
        }

        /// HEAD answers, 1xx, 204 and 304 have no body whatever their Content-Length says.
        func hasBody(_ head: Response) -> Bool {
            request.method != .head && !(100..<200).contains(head.statusCode) && head.statusCode != 204
                && head.statusCode != 304
        }
    }

    /// One task's requests: follows redirects and answers basic-auth challenges, then streams
    /// the final body. Returns the metrics.
    func exchange(
        _ task: HTTPSessionTask,
        delegate: (any HTTPSessionTaskDelegate)?,
        body sink: any ResponseBodySink
    ) async throws -> HTTPTaskMetrics {
        let clock = ContinuousClock()
        let start = clock.now
        let taskDeadline = start + configuration.resourceTimeout.clampedForDeadline
        var metrics = HTTPTaskMetrics(
            startDate: Date(),
            duration: .zero,
            redirectCount: 0,
            bytesReceived: 0,
            bytesSent: 0
        )
        var request = task.originalRequest
        var visited: Set<String> = []  // the first URL goes in at the first redirect
        var authenticationAttempts = 0
        var revalidating: HTTPCachedResponse?
        switch try await cacheUse(for: request, sink: sink) {
        case .load:
            break
        case .deliver(let cached):
            let hop = try hop(for: request, taskDeadline: taskDeadline, watch: nil)
            return try await deliver(cached, through: hop, metrics, task, delegate, sink)
        case .revalidate(let cached, let conditional):
            revalidating = cached
            request = conditional
            task.update(request: conditional)
        }
        let watch = readTimeoutWatchdog.watch(stop: task.stopWorkForReadTimeout)
        task.watchReads(watch)
        defer {
            task.watchReads(nil)
            readTimeoutWatchdog.end(watch)
        }
        while true {
            try Task.checkCancellation()
            await task.waitWhilePaused()
            watch.touch()  // a new request's idle time starts here
            let hop = try hop(for: request, taskDeadline: taskDeadline, watch: watch)
            let (response, head) = try await send(hop, task: task)
            watch.touch()
            metrics.responseStartInterval = clock.now - start
            if let next = try await redirect(
                after: head,
                request: request,
                visited: visited,
                redirects: metrics.redirectCount,
                task: task,
                delegate: delegate
            ) {
                try await discard(response.body, limit: hop.bodyLimit, head: head, watch: watch)
                metrics.redirectCount += 1
                if visited.isEmpty { visited.insert(task.originalRequest.url.absoluteString) }
                visited.insert(next.url.absoluteString)
                task.emit(.redirect(from: head, to: next))
                task.update(request: next)
                request = next
                continue
            }
            if let credential = try await credential(answering: head, attempts: authenticationAttempts, task, delegate)
            {
                try await discard(response.body, limit: hop.bodyLimit, head: head, watch: watch)
                authenticationAttempts += 1
                request.setBasicAuthorization(username: credential.user, password: credential.password)
                continue
            }
            if let cached = revalidating, head.statusCode == 304 {
                try await discard(response.body, limit: hop.bodyLimit, head: head, watch: watch)
                let refreshed = cached.refreshed(by: head)
                configuration.urlCache?.storeCachedResponse(refreshed, for: request)
                metrics.bytesSent = task.countOfBytesSent
                return try await deliver(refreshed, through: hop, metrics, task, delegate, sink)
            }
            if try await begin(head, of: hop, task: task, delegate: delegate, sink: sink) {
                metrics.bytesReceived = try await receive(response.body, head: head, of: hop, task, delegate, sink)
                store(head, for: request, from: sink, task, delegate)
            }
            metrics.bytesSent = task.countOfBytesSent
            return metrics
        }
    }

    /// The hop for `request`: its URL checked (every hop, the first included: a bad port must
    /// never reach a socket address) and its deadline set.
    private func hop(
        for request: Request,
        taskDeadline: ContinuousClock.Instant,
        watch: ReadTimeoutWatchdog.Watch?
    ) throws -> Hop {
        if let failure = request.url.httpValidationFailure {
            throw HTTPSessionError(.invalidURL, url: request.url, message: "\(request.url): \(failure)")
        }
        let timeout = request.timeout ?? configuration.requestTimeout
        let requestEnd = ContinuousClock.now + timeout.clampedForDeadline
        return Hop(
            request: request,
            timeout: timeout,
            requestEnd: requestEnd,
            deadline: Swift.min(requestEnd, taskDeadline),
            resourceTimeout: configuration.resourceTimeout,
            bodyLimit: request.maximumBodySize ?? configuration.maximumResponseBodySize,
            watch: watch
        )
    }

    /// Sends the hop's request and waits for the head (storing its cookies). A request without a
    /// body and of an idempotent method goes once more, on another connection, when its
    /// connection closed before any answer: a kept-alive connection the server closed as the
    /// request went out (RFC 9112 §9.3.1; curl and browsers do the same).
    private func send(_ hop: Hop, task: HTTPSessionTask) async throws -> (HTTPClientResponse, Response) {
        let request = hop.request
        let replayable = request.body == nil && Self.idempotentMethods.contains(request.method)
        let response: HTTPClientResponse
        do {
            response = try await execute(hop, task: task)
        } catch {
            guard replayable, Self.closedBeforeAnswer(error) else { throw error }
            response = try await execute(hop, task: task)
        }
        let head = Response(
            url: request.url,
            statusCode: Int(response.status.code),
            headers: HTTPFields(response.headers),
            httpVersion: Self.versionText(response.version)
        )
        if request.handlesCookies, let store = configuration.cookieStore {
            store.store(setCookieHeaders: head.headers[values: .setCookie], from: request.url)
        }
        return (response, head)
    }

    /// `HTTP/1.1`, `HTTP/2`: the common ones without formatting a string per response.
    static func versionText(_ version: HTTPVersion) -> String {
        switch (version.major, version.minor) {
        case (1, 1): "HTTP/1.1"
        case (2, _): "HTTP/2"
        case (1, 0): "HTTP/1.0"
        default: "HTTP/\(version.major).\(version.minor)"
        }
    }

    /// One attempt at the hop's request, up to the response head, within the hop's deadline.
    private func execute(_ hop: Hop, task: HTTPSessionTask) async throws -> HTTPClientResponse {
        guard ContinuousClock.now < hop.deadline else { throw hop.expired() }
        if let foreignEventLoop { throw Self.unusableEventLoops(foreignEventLoop, url: hop.request.url) }
        do {
            return try await client(for: hop.request.url).execute(
                makeClientRequest(hop.request, task: task, watch: hop.watch),
                deadline: .now() + (hop.deadline - ContinuousClock.now).timeAmount,
                logger: clientLogger
            )
        } catch let error as HTTPClientError where error == .deadlineExceeded {
            throw hop.expired()
        }
    }

    private static let idempotentMethods: Set<HTTPRequest.Method> = [.get, .head, .options, .delete, .trace]

    /// The connection closed, or was found closed, before any of the answer arrived.
    static func closedBeforeAnswer(_ error: any Error) -> Bool {
        switch error {
        case let error as HTTPClientError: error == .remoteConnectionClosed
        case ChannelError.ioOnClosedChannel, ChannelError.eof, ChannelError.outputClosed: true
        case let error as IOError: error.errnoCode == ECONNRESET || error.errnoCode == EPIPE
        default: false
        }
    }

    /// The basic-auth credential answering a 401's challenge (the delegate's, else the
    /// configuration's), at most three times; `nil` when the 401 is the answer.
    private func credential(
        answering head: Response,
        attempts: Int,
        _ task: HTTPSessionTask,
        _ delegate: (any HTTPSessionTaskDelegate)?
    ) async throws -> HTTPCredential? {
        guard head.statusCode == 401, attempts < 3, let challenge = Self.challenge(in: head, failures: attempts) else {
            return nil
        }
        return await delegate?.task(task, didReceiveChallenge: challenge) ?? configuration.credential
    }

    /// Starts the final response: its declared length checked against the limit, the sink
    /// opened, the response published and the delegate asked. `false` when the delegate wants
    /// no body (`.finish`).
    private func begin(
        _ head: Response,
        of hop: Hop,
        task: HTTPSessionTask,
        delegate: (any HTTPSessionTaskDelegate)?,
        sink: any ResponseBodySink
    ) async throws -> Bool {
        if let limit = hop.bodyLimit, let expected = head.expectedContentLength, expected > limit,
            head.headers[.contentEncoding] == nil, hop.hasBody(head)
        {
            throw Self.bodyTooLarge(head, limit: limit, detail: "its Content-Length of \(expected) bytes")
        }
        let offset: Int64
        do {
            offset = try sink.begin(head)
        } catch {
            throw Self.storeFailed(hop.request.url, error)
        }
        task.update(response: head, resumedAt: offset)
        task.emit(.response(head))
        switch await delegate?.task(task, didReceive: head) ?? .allow {
        case .allow: return true
        case .cancel: throw HTTPSessionError.cancelled(hop.request.url)
        case .finish: return false
        }
    }

    /// Streams the body into `sink` (and to the delegate and event streams), within the hop's
    /// deadline and size limit; a body shorter than its Content-Length is a lost connection.
    /// Returns the bytes received.
    private func receive(
        _ body: HTTPClientResponse.Body,
        head: Response,
        of hop: Hop,
        _ task: HTTPSessionTask,
        _ delegate: (any HTTPSessionTaskDelegate)?,
        _ sink: any ResponseBodySink
    ) async throws -> Int64 {
        let url = hop.request.url
        var received: Int64 = 0
        let byteDelegate = delegate as? any HTTPSessionTaskByteDelegate
        for try await buffer in body {
            try Task.checkCancellation()
            hop.watch?.touch()
            guard ContinuousClock.now < hop.deadline else { throw hop.expired() }
            // A Data per chunk only for those who look at chunks (delegate, event streams), made
            // once, as a copy: they may keep it (event streams buffer chunks, progressive decoding
            // queues them). A slice of the client's receive buffer would pin the whole buffer, and
            // NIO's pool reuses a buffer once its last reference goes: ordered by the runtime's
            // atomic reference count, which the thread sanitizer does not see.
            var chunk: Data?
            func makeChunk() -> Data {
                if let chunk { return chunk }
                let copy = Data(buffer: buffer, byteTransferStrategy: .copy)
                chunk = copy
                return copy
            }
            received += Int64(buffer.readableBytes)
            if let limit = hop.bodyLimit, received > limit {
                throw Self.bodyTooLarge(head, limit: limit, detail: "its body")
            }
            let state = task.didReceive(byteCount: buffer.readableBytes, chunk: makeChunk)
            if state.isCanceling { throw HTTPSessionError.cancelled(url) }
            do {
                try buffer.withUnsafeReadableBytes { try sink.append($0) }
            } catch {
                throw Self.storeFailed(url, error)
            }
            if let byteDelegate {
                buffer.withUnsafeReadableBytes { byteDelegate.task(task, didReceiveBytes: $0) }
            } else if let delegate {
                delegate.task(task, didReceive: makeChunk())
            }
            if state.isPaused {
                await task.waitWhilePaused()  // resume() restarts the idle time
                if task.isCanceling { throw HTTPSessionError.cancelled(url) }
            }
        }
        try Task.checkCancellation()
        if let expected = head.expectedContentLength, received < expected, hop.hasBody(head),
            head.headers[.contentEncoding] == nil
        {
            throw HTTPSessionError(
                .connectionLost,
                url: url,
                message: "\(url): the connection closed after \(received) of \(expected) body bytes",
                response: head
            )
        }
        return received
    }

    // MARK: The session's response cache

    /// What the session's cache does for a task's first request.
    private enum CacheUse {
        case load
        case deliver(HTTPCachedResponse)
        /// Send `conditional` (the request with the stored validators); a `304` delivers the
        /// stored response.
        case revalidate(HTTPCachedResponse, conditional: Request)
    }

    /// The cache's part for `request`: only `GET`s of data and upload tasks with a cache.
    private func cacheUse(for request: Request, sink: any ResponseBodySink) async throws -> CacheUse {
        guard let cache = configuration.urlCache, request.method == .get, sink is CollectedBody else { return .load }
        let policy = request.cachePolicy ?? configuration.requestCachePolicy
        guard policy != .reloadIgnoringLocalCacheData else { return .load }
        let sent = configuration.defaultHeaders.merging(request.headers)
        let cached = await cache.cachedResponse(for: request, headers: sent)
        switch policy {
        case .returnCacheDataDontLoad:
            guard let cached else {
                throw HTTPSessionError(
                    .resourceUnavailable,
                    url: request.url,
                    message: "\(request.url): not in the cache, and the cache policy forbids loading it"
                )
            }
            return .deliver(cached)
        case .returnCacheDataElseLoad:
            return cached.map(CacheUse.deliver) ?? .load
        case .useProtocolCachePolicy, .reloadIgnoringLocalCacheData:
            guard let cached else { return .load }
            if cached.freshness.use(at: Date()) == .fresh { return .deliver(cached) }
            // The caller's own conditional request gets the server's answer as it is.
            guard request.headers[.ifNoneMatch] == nil, request.headers[.ifModifiedSince] == nil else { return .load }
            var conditional = request
            let stored = cached.response.headers
            if let etag = stored[.eTag] { conditional.headers[.ifNoneMatch] = etag }
            if let modified = stored[.lastModified] { conditional.headers[.ifModifiedSince] = modified }
            return conditional.headers == request.headers ? .load : .revalidate(cached, conditional: conditional)
        }
    }

    /// Hands a stored response to the task as if it had arrived: the head, then the body.
    private func deliver(
        _ cached: HTTPCachedResponse,
        through hop: Hop,
        _ metrics: HTTPTaskMetrics,
        _ task: HTTPSessionTask,
        _ delegate: (any HTTPSessionTaskDelegate)?,
        _ sink: any ResponseBodySink
    ) async throws -> HTTPTaskMetrics {
        var metrics = metrics
        metrics.servedFromCache = true
        let request = hop.request
        guard try await begin(cached.response, of: hop, task: task, delegate: delegate, sink: sink) else {
            return metrics
        }
        let data = cached.data
        let state = task.didReceive(byteCount: data.count) { data }
        if state.isCanceling { throw HTTPSessionError.cancelled(request.url) }
        do {
            try data.withUnsafeBytes { try sink.append($0) }
        } catch {
            throw Self.storeFailed(request.url, error)
        }
        delegate?.task(task, didReceive: data)
        metrics.bytesReceived = Int64(data.count)
        return metrics
    }

    /// Stores a data task's complete response when HTTP and the delegate allow.
    private func store(
        _ head: Response,
        for request: Request,
        from sink: any ResponseBodySink,
        _ task: HTTPSessionTask,
        _ delegate: (any HTTPSessionTaskDelegate)?
    ) {
        guard let cache = configuration.urlCache, let body = sink as? CollectedBody else { return }
        let sent = configuration.defaultHeaders.merging(request.headers)
        guard HTTPResponseCache.mayStore(head, for: request, sent: sent) else { return }
        let proposed = HTTPCachedResponse(
            response: head,
            data: body.take(),
            storedDate: Date(),
            varyingHeaders: HTTPResponseCache.varyingHeaders(of: head, sent: sent)
        )
        guard let accepted = delegate.map({ $0.task(task, willCacheResponse: proposed) }) ?? proposed else { return }
        cache.storeCachedResponse(accepted, for: request)
    }

    /// The error for a body the sink could not store.
    private static func storeFailed(_ url: URL, _ error: any Error) -> HTTPSessionError {
        HTTPSessionError(.fileError, url: url, message: "\(url): cannot store the body: \(error.localizedDescription)")
    }
}
