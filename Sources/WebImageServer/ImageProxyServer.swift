import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import UnixSignals

/// The image proxy on Hummingbird 2: `GET /health`, `GET /info/…` and `GET /{signature}/…`,
/// answered by an ``ImageProxy``. Start it with ``start(proxy:host:port:requestLog:)`` (tests,
/// embedding), or run it until SIGTERM/SIGINT with ``run(proxy:host:port:gracePeriod:requestLog:onListening:)``.
public final class ImageProxyServer: Sendable {
    /// The port it listens on (the one picked when 0 was asked for).
    public let port: Int
    public let host: String
    private let serviceGroup: ServiceGroup
    private let task: Task<Void, any Error>

    private init(host: String, port: Int, serviceGroup: ServiceGroup, task: Task<Void, any Error>) {
        self.host = host
        self.port = port
        self.serviceGroup = serviceGroup
        self.task = task
    }

    /// `http://HOST:PORT`.
    public var baseURL: String { "http://\(host.contains(":") ? "[\(host)]" : host):\(port)" }

    /// Starts `proxy` listening on `host:port` (port 0: a free one) and returns once it accepts
    /// connections; `requestLog` receives one line per request (status, ms, path).
    public static func start(
        proxy: ImageProxy,
        host: String = "127.0.0.1",
        port: Int = 0,
        requestLog: (@Sendable (String) -> Void)? = nil
    ) async throws -> ImageProxyServer {
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let application = makeApplication(proxy: proxy, host: host, port: port, requestLog: requestLog) { port in
            continuation.yield(port)
            continuation.finish()
        }
        let serviceGroup = ServiceGroup(configuration: .init(services: [application], logger: quietLogger))
        let task = Task { try await serviceGroup.run() }
        var bound = 0
        for await value in ports { bound = value }
        guard bound > 0 else {
            await serviceGroup.triggerGracefulShutdown()
            _ = await task.result
            throw ImageProxyServerError(message: "cannot listen on \(host):\(port)")
        }
        return ImageProxyServer(host: host, port: bound, serviceGroup: serviceGroup, task: task)
    }

    /// Stops accepting, lets requests in flight finish, and returns when the server is down.
    public func stop() async {
        await serviceGroup.triggerGracefulShutdown()
        _ = await task.result
    }

    /// Runs until SIGTERM or SIGINT, then stops accepting and lets requests in flight finish
    /// within `gracePeriod`. `onListening` receives the bound port once it accepts connections.
    public static func run(
        proxy: ImageProxy,
        host: String,
        port: Int,
        gracePeriod: Duration = .seconds(10),
        requestLog: (@Sendable (String) -> Void)? = nil,
        onListening: @escaping @Sendable (Int) -> Void
    ) async throws {
        let application = makeApplication(
            proxy: proxy,
            host: host,
            port: port,
            requestLog: requestLog,
            onListening: onListening
        )
        var configuration = ServiceGroupConfiguration(
            services: [.init(service: application)],
            gracefulShutdownSignals: [.sigterm, .sigint],
            cancellationSignals: [],
            logger: quietLogger
        )
        configuration.maximumGracefulShutdownDuration = gracePeriod
        let serviceGroup = ServiceGroup(configuration: configuration)
        try await serviceGroup.run()
    }

    private static var quietLogger: Logger {
        var logger = Logger(label: "webimage.serve")
        logger.logLevel = .critical
        return logger
    }

    private static func makeApplication(
        proxy: ImageProxy,
        host: String,
        port: Int,
        requestLog: (@Sendable (String) -> Void)?,
        onListening: @escaping @Sendable (Int) -> Void
    ) -> some Service {
        Application(
            responder: ProxyResponder(proxy: proxy, requestLog: requestLog),
            configuration: .init(address: .hostname(host, port: port), serverName: nil),
            onServerRunning: { channel in onListening(channel.localAddress?.port ?? 0) },
            logger: quietLogger
        )
    }
}

/// Why the server could not start.
public struct ImageProxyServerError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}

private struct ProxyResponder: HTTPResponder {
    typealias Context = BasicRequestContext

    let proxy: ImageProxy
    let requestLog: (@Sendable (String) -> Void)?

    func respond(to request: Request, context: Context) async throws -> Response {
        let started = ContinuousClock.now
        let target = request.head.path ?? "/"
        let path = String(target.prefix { $0 != "?" })
        let answer: ProxyResponse
        if path == "/health" {
            answer = ProxyResponse(
                status: 200,
                headers: [("Content-Type", "application/json"), ("Cache-Control", "no-cache")],
                body: Data(#"{"status":"ok"}"#.utf8)
            )
        } else if request.method != .get && request.method != .head {
            answer = .failure(ProxyError(status: 405, code: "methodNotAllowed", message: "only GET and HEAD"))
        } else {
            answer = await proxy.respond(
                path: path,
                accept: request.headers[.accept],
                ifNoneMatch: request.headers[.ifNoneMatch]
            )
        }
        if let requestLog {
            let elapsed = ContinuousClock.now - started
            let milliseconds = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
            requestLog("\(answer.status) \(String(format: "%.1f", milliseconds)) ms \(path.prefix(300))")
        }
        var fields = HTTPFields()
        for (name, value) in answer.headers {
            if let field = HTTPField.Name(name) { fields.append(HTTPField(name: field, value: value)) }
        }
        fields[.contentLength] = String(answer.body.count)
        let body = request.method == .head ? ResponseBody() : ResponseBody(byteBuffer: ByteBuffer(bytes: answer.body))
        return Response(status: .init(code: answer.status), headers: fields, body: body)
    }
}
