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
        let host = HostAdmission.key(for: url)
        let entered = await admission.enter(
            host,
            taskIdentifier: task.taskIdentifier,
            startOrder: task.startOrder,
            priority: { task.priority }
        )
        if entered {
            do {
                metrics = try await exchange(task, delegate: delegate, body: body)
            } catch {
                if task.isCanceling {
                    outcome = .cancelled(url)
                } else if task.wasStoppedByReadTimeout {
                    let current = task.currentRequest.url
                    outcome = HTTPSessionError(
                        .timedOut,
                        url: current,
                        message: "\(current): nothing received for \(configuration.readTimeout) (the read timeout)"
                    )
                } else {
                    outcome = Self.map(error, url: task.currentRequest.url)
                }
                metrics = .empty
                metrics.bytesReceived = task.countOfBytesReceived
                metrics.bytesSent = task.countOfBytesSent
            }
            admission.leave(host)  // before the completion, which may start the next task
        } else {
            outcome = .cancelled(url)
            metrics = .empty
        }
        metrics.duration = clock.now - start
        body.metrics = metrics
        task.finish(outcome)
    }

    /// Reads and drops a body nobody receives (a redirect's, a challenge's), up to `limit` bytes.
    func discard(
        _ body: HTTPClientResponse.Body,
        limit: Int64?,
        head: Response,
        watch: ReadTimeoutWatchdog.Watch
    ) async throws {
        var count: Int64 = 0
        for try await buffer in body {
            watch.touch()
            count += Int64(buffer.readableBytes)
            if let limit, count > limit { throw Self.bodyTooLarge(head, limit: limit, detail: "its body") }
        }
    }

    /// The error for a response whose body (`detail`) is over `limit` bytes.
    static func bodyTooLarge(_ head: Response, limit: Int64, detail: String) -> HTTPSessionError {
        HTTPSessionError(
            .responseTooLarge,
            url: head.url,
            message: "\(head.url): the response is too large: \(detail) is over the \(limit)-byte limit",
            response: head
        )
    }

    static func challenge(in head: Response, failures: Int) -> HTTPAuthenticationChallenge? {
        guard let header = head.headers[values: .wwwAuthenticate].first else { return nil }
        let scheme = header.split(separator: " ").first.map(String.init) ?? header
        guard scheme.lowercased() == "basic" else { return nil }
        var realm: String?
        if let range = header.range(of: "realm=\"") {
            realm = header[range.upperBound...].split(separator: "\"").first.map(String.init)
        }
        return HTTPAuthenticationChallenge(scheme: scheme, realm: realm, previousFailureCount: failures, response: head)
    }

    /// The AsyncHTTPClient request for `request`, with default headers and a streamed body
    /// (every chunk sent touches `watch`, the task's read timeout).
    func makeClientRequest(
        _ request: Request,
        task: HTTPSessionTask,
        watch: ReadTimeoutWatchdog.Watch?
    ) throws -> HTTPClientRequest {
        var clientRequest = HTTPClientRequest(url: request.url.absoluteString)
        clientRequest.method = request.method.nioMethod
        // The session's default headers, less those the request sets, then the request's: written
        // straight into the client's headers (no merged HTTPFields built per request).
        let (defaults, own) = (configuration.defaultHeaders, request.headers)
        // HTTPFields keeps each cookie as a field of its own (HTTP/2's form); HTTP/1.1 allows one
        // Cookie line (RFC 6265 §5.4), so they go as one, joined with "; ".
        var cookie = own.contains(.cookie) ? own[.cookie] : defaults[.cookie]
        if cookie == nil, request.handlesCookies {
            cookie = configuration.cookieStore?.cookieHeader(for: request.url)
        }
        let dropsAcceptEncoding = !configuration.decompressesResponses
        clientRequest.headers.reserveCapacity(defaults.count + own.count + 1)
        func sends(_ field: HTTPField) -> Bool {
            field.name != .cookie && !(dropsAcceptEncoding && field.name == .acceptEncoding)
        }
        for field in defaults where sends(field) && !own.contains(field.name) {
            clientRequest.headers.add(name: field.name.rawName, value: field.value)
        }
        for field in own where sends(field) {
            clientRequest.headers.add(name: field.name.rawName, value: field.value)
        }
        if let cookie { clientRequest.headers.add(name: "Cookie", value: cookie) }
        switch request.body {
        case .data(let data)?:
            clientRequest.body = .stream(
                UploadChunks(
                    source: .data(data),
                    onProgress: {
                        watch?.touch()
                        task.didSend(total: $0, expected: Int64(data.count))
                    }
                ),
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
                UploadChunks(
                    source: .file(url),
                    onProgress: {
                        watch?.touch()
                        task.didSend(total: $0, expected: size)
                    }
                ),
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
