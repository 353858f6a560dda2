import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Synchronization

/// A request context that keeps the connection, to notice a client that goes away.
struct ProxyRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    let channel: any Channel

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }
}

/// Answers `/health` and the proxy's URLs; cancels a request whose client closed the connection.
struct ProxyResponder: HTTPResponder {
    typealias Context = ProxyRequestContext

    let proxy: ImageProxy
    let requestLog: (@Sendable (RequestLogEntry) -> Void)?

    func respond(to request: Request, context: Context) async throws -> Response {
        let started = ContinuousClock.now
        let target = request.head.path ?? "/"
        let fullPath = String(target.prefix { $0 != "?" })
        let path = Self.withoutPrefix(fullPath, proxy.configuration.pathPrefix)
        var answer: ProxyResponse
        if path == "/health" || fullPath == "/health" {
            answer = await proxy.health()
        } else if path == nil {
            answer = .failure(ProxyError(.notFound, "not under the path prefix"))
        } else if request.method == .options, proxy.configuration.allowOrigin != nil {
            answer = ProxyResponse(status: 200, headers: [], body: Data())
        } else if request.method != .get && request.method != .head {
            answer = .failure(ProxyError(.methodNotAllowed, "only GET and HEAD"))
        } else {
            let accept = request.headers[.accept]
            let ifNoneMatch = request.headers[.ifNoneMatch]
            let ifModifiedSince = request.headers[.ifModifiedSince]
            let work = Task { [proxy, path] in
                await proxy.respond(
                    path: path ?? "/",
                    accept: accept,
                    ifNoneMatch: ifNoneMatch,
                    ifModifiedSince: ifModifiedSince
                )
            }
            let watch = try? await context.channel.pipeline.handler(type: ClientCloseHandler.self)
                .map { $0.watch }.get()
            let registration = watch?.onClose { work.cancel() }
            answer = await withTaskCancellationHandler {
                await work.value
            } onCancel: {
                work.cancel()
            }
            if let registration { watch?.remove(registration) }
        }
        if let requestLog {
            let elapsed = ContinuousClock.now - started
            requestLog(
                RequestLogEntry(
                    status: answer.status,
                    milliseconds: Double(elapsed.components.seconds) * 1000
                        + Double(elapsed.components.attoseconds) / 1e15,
                    sourceHost: answer.sourceHost,
                    errorCode: answer.errorCode?.rawValue,
                    path: String(fullPath.prefix(300))
                )
            )
        }
        var fields = HTTPFields()
        for (name, value) in answer.headers {
            if let field = HTTPField.Name(name) { fields.append(HTTPField(name: field, value: value)) }
        }
        fields[.contentLength] = String(answer.body.count)
        if let origin = proxy.configuration.allowOrigin {
            fields[.accessControlAllowOrigin] = origin
            fields[.accessControlAllowMethods] = "GET, HEAD, OPTIONS"
        }
        // Browsers must not guess another type than the one sent (results and errors alike).
        fields[.xContentTypeOptions] = "nosniff"
        let body = request.method == .head ? ResponseBody() : ResponseBody(byteBuffer: ByteBuffer(bytes: answer.body))
        return Response(status: .init(code: answer.status), headers: fields, body: body)
    }
}

extension ProxyResponder {
    /// `path` after `prefix` (`/img/x` → `/x`); `nil` when it is not under the prefix.
    static func withoutPrefix(_ path: String, _ prefix: String) -> String? {
        guard !prefix.isEmpty else { return path }
        let trimmed = prefix.hasSuffix("/") ? String(prefix.dropLast()) : prefix
        guard path.hasPrefix(trimmed) else { return nil }
        let rest = path.dropFirst(trimmed.count)
        guard rest.isEmpty || rest.hasPrefix("/") else { return nil }
        return rest.isEmpty ? "/" : String(rest)
    }
}

/// `GET /metrics`: the Prometheus text exposition.
struct MetricsResponder: HTTPResponder {
    typealias Context = BasicRequestContext

    let metrics: ProxyMetrics

    func respond(to request: Request, context: Context) async throws -> Response {
        guard request.head.path?.prefix(while: { $0 != "?" }) == "/metrics" else {
            return Response(status: .notFound, headers: [.contentLength: "0", .xContentTypeOptions: "nosniff"])
        }
        let text = metrics.exposition()
        return Response(
            status: .ok,
            headers: [
                .contentType: "text/plain; version=0.0.4; charset=utf-8", .contentLength: String(text.utf8.count),
                .xContentTypeOptions: "nosniff",
            ],
            body: request.method == .head ? ResponseBody() : ResponseBody(byteBuffer: ByteBuffer(string: text))
        )
    }
}

/// Watches one connection for its client closing it (its input ending), the way nginx notices
/// a client abort. Requests in flight on the connection register to be cancelled.
final class ClientCloseHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    let watch = ConnectionWatch()

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event { watch.close() }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        watch.close()
        context.fireChannelInactive()
    }
}

/// Whether a connection's client has gone, and who to tell. Thread-safe; callbacks run outside
/// its lock.
final class ConnectionWatch: Sendable {
    private struct State {
        var closed = false
        var next = 0
        var callbacks: [Int: @Sendable () -> Void] = [:]
    }

    private let state = Mutex(State())

    /// Calls `callback` once the client has gone (now, if it has). Returns a registration for
    /// ``remove(_:)``.
    func onClose(_ callback: @escaping @Sendable () -> Void) -> Int {
        let (id, closed) = state.withLock { state -> (Int, Bool) in
            if state.closed { return (-1, true) }
            state.next += 1
            state.callbacks[state.next] = callback
            return (state.next, false)
        }
        if closed { callback() }
        return id
    }

    func remove(_ registration: Int) {
        _ = state.withLock { $0.callbacks.removeValue(forKey: registration) }
    }

    func close() {
        let callbacks = state.withLock { state -> [@Sendable () -> Void] in
            guard !state.closed else { return [] }
            state.closed = true
            defer { state.callbacks = [:] }
            return Array(state.callbacks.values)
        }
        for callback in callbacks { callback() }
    }
}

extension HTTPField.Name {
    /// `X-Content-Type-Options`: `nosniff` on every answer.
    static let xContentTypeOptions = HTTPField.Name("X-Content-Type-Options")!
    /// CORS, with `--allow-origin`.
    static let accessControlAllowOrigin = HTTPField.Name("Access-Control-Allow-Origin")!
    static let accessControlAllowMethods = HTTPField.Name("Access-Control-Allow-Methods")!
}
