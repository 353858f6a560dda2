import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import NIOHTTPCompression
import NIOPosix
import NIOSSL

extension HTTPSession {
    /// Runs a task to completion: the exchange (with redirects and authentication) raced against
    /// the resource timeout, then `finish`.
    func run(
        _ task: HTTPSessionTask,
        delegate: (any HTTPSessionTaskDelegate)?,
        collect body: any ResponseBodySink
    ) async {
        let clock = ContinuousClock()
        let start = clock.now
        let url = task.originalRequest.url
        var metrics: HTTPTaskMetrics
        var outcome: HTTPSessionError?
        do {
            metrics = try await exchange(task, delegate: delegate, body: body)
        } catch {
            if task.isCanceling {
                outcome = .cancelled(url)
            } else {
                outcome = Self.map(error, url: task.currentRequest.url)
            }
            metrics = .empty
            metrics.bytesReceived = task.countOfBytesReceived
            metrics.bytesSent = task.countOfBytesSent
        }
        metrics.duration = clock.now - start
        body.metrics = metrics
        task.finish(outcome)
    }

    /// One task's requests: follows redirects and answers basic-auth challenges, then streams
    /// the final body. Returns the metrics.
    // shape: issue 33 splits this (named in its notes: the load task owning its stages, or a long function doing several jobs)
    private func exchange(
        _ task: HTTPSessionTask,
        delegate: (any HTTPSessionTaskDelegate)?,
        body sink: any ResponseBodySink
    )
        async throws -> HTTPTaskMetrics
    {
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
        var visited: Set<String> = [request.url.absoluteString]
        var authenticationAttempts = 0
        while true {
            try Task.checkCancellation()
            await task.waitWhilePaused()
            // Every hop, the first included: a bad port must never reach a socket address.
            if let failure = request.url.httpValidationFailure {
                throw HTTPSessionError(.invalidURL, url: request.url, message: "\(request.url): \(failure)")
            }
            // One deadline for this request: its own timeout or the task's, whichever ends first.
            // AsyncHTTPClient enforces it until the head; each body chunk checks it after (and the
            // read timeout ends a body that stalls outright). No timers, so no event-loop wake-ups.
            let timeout = request.timeout ?? configuration.requestTimeout
            let requestEnd = clock.now + timeout.clampedForDeadline
            let deadline = Swift.min(requestEnd, taskDeadline)
            let bodyLimit = request.maximumBodySize ?? configuration.maximumResponseBodySize
            let expired: @Sendable () -> HTTPSessionError = { [url = request.url] in
                HTTPSessionError(
                    .timedOut,
                    url: url,
                    message: deadline == requestEnd
                        ? "\(url): no complete response within \(timeout)"
                        : "\(url): the task took longer than \(self.configuration.resourceTimeout)"
                )
            }
            guard clock.now < deadline else { throw expired() }
            let response: HTTPClientResponse
            do {
                response = try await client(for: request.url).execute(
                    makeClientRequest(request, task: task),
                    deadline: .now() + (deadline - clock.now).timeAmount,
                    logger: logger
                )
            } catch let error as HTTPClientError where error == .deadlineExceeded {
                throw expired()
            }
            let head = Response(
                url: request.url,
                statusCode: Int(response.status.code),
                headers: HTTPFields(response.headers),
                httpVersion: response.version.major == 2
                    ? "HTTP/2" : "HTTP/\(response.version.major).\(response.version.minor)"
            )
            metrics.responseStartInterval = clock.now - start
            if request.handlesCookies, let store = configuration.cookieStore {
                store.store(setCookieHeaders: head.headers[values: .setCookie], from: request.url)
            }

            if let next = try await redirect(
                after: head,
                request: request,
                visited: visited,
                redirects: metrics.redirectCount,
                task: task,
                delegate: delegate
            ) {
                try await discard(response.body, limit: bodyLimit, head: head)
                metrics.redirectCount += 1
                visited.insert(next.url.absoluteString)
                task.emit(.redirect(from: head, to: next))
                task.update(request: next)
                request = next
                continue
            }
            if head.statusCode == 401, let challenge = Self.challenge(in: head, failures: authenticationAttempts),
                authenticationAttempts < 3
            {
                let credential =
                    await (delegate?.task(task, didReceiveChallenge: challenge) ?? configuration.credential)
                if let credential {
                    try await discard(response.body, limit: bodyLimit, head: head)
                    authenticationAttempts += 1
                    request.setBasicAuthorization(username: credential.user, password: credential.password)
                    continue
                }
            }

            // HEAD answers, 1xx, 204 and 304 have no body whatever their Content-Length says.
            let hasBody =
                request.method != .head && !(100..<200).contains(head.statusCode) && head.statusCode != 204
                && head.statusCode != 304
            if let limit = bodyLimit, let expected = head.expectedContentLength, expected > limit,
                head.headers[.contentEncoding] == nil, hasBody
            {
                throw Self.bodyTooLarge(head, limit: limit, detail: "its Content-Length of \(expected) bytes")
            }
            let offset: Int64
            do {
                offset = try sink.begin(head)
            } catch {
                throw HTTPSessionError(
                    .fileError,
                    url: request.url,
                    message: "\(request.url): cannot store the body: \(error.localizedDescription)"
                )
            }
            task.update(response: head, resumedAt: offset)
            task.emit(.response(head))
            switch await delegate?.task(task, didReceive: head) ?? .allow {
            case .allow: break
            case .cancel: throw HTTPSessionError.cancelled(request.url)
            case .finish:
                metrics.bytesSent = task.countOfBytesSent
                return metrics
            }
            var received: Int64 = 0
            for try await buffer in response.body {
                try Task.checkCancellation()
                guard clock.now < deadline else { throw expired() }
                // A Data per chunk only for those who look at chunks (delegate, event streams).
                let makeChunk = { Data(buffer: buffer, byteTransferStrategy: .noCopy) }
                received += Int64(buffer.readableBytes)
                if let limit = bodyLimit, received > limit {
                    throw Self.bodyTooLarge(head, limit: limit, detail: "its body")
                }
                let state = task.didReceive(byteCount: buffer.readableBytes, chunk: makeChunk)
                if state.isCanceling { throw HTTPSessionError.cancelled(request.url) }
                do {
                    try buffer.withUnsafeReadableBytes { try sink.append($0) }
                } catch {
                    throw HTTPSessionError(
                        .fileError,
                        url: request.url,
                        message: "\(request.url): cannot store the body: \(error.localizedDescription)"
                    )
                }
                if let delegate { delegate.task(task, didReceive: makeChunk()) }
                if state.isPaused {
                    await task.waitWhilePaused()
                    if task.isCanceling { throw HTTPSessionError.cancelled(request.url) }
                }
            }
            try Task.checkCancellation()
            if let expected = head.expectedContentLength, received < expected, hasBody,
                head.headers[.contentEncoding] == nil
            {
                throw HTTPSessionError(
                    .connectionLost,
                    url: request.url,
                    message: "\(request.url): the connection closed after \(received) of \(expected) body bytes",
                    response: head
                )
            }
            metrics.bytesReceived = received
            metrics.bytesSent = task.countOfBytesSent
            return metrics
        }
    }

    /// Reads and drops a body nobody receives (a redirect's, a challenge's), up to `limit` bytes.
    private func discard(_ body: HTTPClientResponse.Body, limit: Int64?, head: Response) async throws {
        var count: Int64 = 0
        for try await buffer in body {
            count += Int64(buffer.readableBytes)
            if let limit, count > limit { throw Self.bodyTooLarge(head, limit: limit, detail: "its body") }
        }
    }

    /// The error for a response whose body (`detail`) is over `limit` bytes.
    private static func bodyTooLarge(_ head: Response, limit: Int64, detail: String) -> HTTPSessionError {
        HTTPSessionError(
            .responseTooLarge,
            url: head.url,
            message: "\(head.url): the response is too large: \(detail) is over the \(limit)-byte limit",
            response: head
        )
    }

    private static func challenge(in head: Response, failures: Int) -> HTTPAuthenticationChallenge? {
        guard let header = head.headers[values: .wwwAuthenticate].first else { return nil }
        let scheme = header.split(separator: " ").first.map(String.init) ?? header
        guard scheme.lowercased() == "basic" else { return nil }
        var realm: String?
        if let range = header.range(of: "realm=\"") {
            realm = header[range.upperBound...].split(separator: "\"").first.map(String.init)
        }
        return HTTPAuthenticationChallenge(scheme: scheme, realm: realm, previousFailureCount: failures, response: head)
    }

    /// The AsyncHTTPClient request for `request`, with default headers and a streamed body.
    private func makeClientRequest(_ request: Request, task: HTTPSessionTask) throws -> HTTPClientRequest {
        var clientRequest = HTTPClientRequest(url: request.url.absoluteString)
        clientRequest.method = request.method.nioMethod
        var headers = configuration.defaultHeaders.merging(request.headers)
        if request.handlesCookies, !headers.contains(.cookie),
            let cookie = configuration.cookieStore?.cookieHeader(for: request.url)
        {
            headers[.cookie] = cookie
        }
        if !configuration.decompressesResponses { headers[.acceptEncoding] = nil }
        // HTTPFields keeps each cookie as a field of its own (HTTP/2's form); HTTP/1.1 allows one
        // Cookie line (RFC 6265 §5.4), so they go as one, joined with "; ".
        let cookie = headers[.cookie]
        for field in headers where field.name != .cookie {
            clientRequest.headers.add(name: field.name.rawName, value: field.value)
        }
        if let cookie { clientRequest.headers.add(name: "Cookie", value: cookie) }
        switch request.body {
        case .data(let data)?:
            clientRequest.body = .stream(
                UploadChunks(source: .data(data), onProgress: { task.didSend(total: $0, expected: Int64(data.count)) }),
                length: .known(Int64(data.count))
            )
        case .file(let url)?:
            let size: Int64
            do {
                size = (try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber)?.int64Value ?? 0
            } catch {
                throw HTTPSessionError(
                    .fileError,
                    url: request.url,
                    message: "\(url.path): cannot read the upload file: \(error.localizedDescription)"
                )
            }
            clientRequest.body = .stream(
                UploadChunks(source: .file(url), onProgress: { task.didSend(total: $0, expected: size) }),
                length: .known(size)
            )
        case nil:
            break
        }
        return clientRequest
    }

}

extension Duration {
    /// NIO's `TimeAmount` for this duration, whole nanoseconds, saturating at `Int64`'s range.
    var timeAmount: TimeAmount {
        let nanoseconds = self / .nanoseconds(1)
        return .nanoseconds(Int64(exactly: nanoseconds.rounded(.down)) ?? (nanoseconds < 0 ? 0 : .max))
    }

    /// At most 10⁹ s (about 31 years), the longest a deadline here is ever set (a negative
    /// setting counts as 0), so adding it to an instant never overflows.
    var clampedForDeadline: Duration {
        Swift.min(Swift.max(self, .zero), .seconds(1_000_000_000))
    }
}
