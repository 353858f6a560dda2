import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// An HTTP `CONNECT` proxy on 127.0.0.1 for tests: it opens a tunnel to the host and port each
/// `CONNECT` names and records the request, so a test can see which loads went through it.
/// Tunnels go to loopback addresses only (`127.0.0.0/8`, `::1`, `localhost`); any other target
/// is answered 403 without a connection. With ``requiredAuthorization`` set, a `CONNECT`
/// without that `Proxy-Authorization` value is answered 407.
public final class ConnectProxyServer: Sendable {
    /// One `CONNECT` the proxy received.
    public struct Tunnel: Sendable, Equatable {
        /// `host:port` as the request line named it.
        public var target: String
        /// The `Proxy-Authorization` header, if any.
        public var authorization: String?
    }

    /// The port the proxy listens on (127.0.0.1).
    public let port: Int
    private let channel: any Channel
    private let state: NIOLockedValueBox<[Tunnel]>

    /// Every `CONNECT` received so far, in order.
    public var tunnels: [Tunnel] { state.withLockedValue { $0 } }

    /// Starts a proxy on 127.0.0.1 at a free port.
    /// - Parameter requiredAuthorization: a `Proxy-Authorization` value every `CONNECT` must carry.
    public static func start(requiredAuthorization: String? = nil) async throws -> ConnectProxyServer {
        let state = NIOLockedValueBox<[Tunnel]>([])
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        ConnectRequestHandler(requiredAuthorization: requiredAuthorization, record: state)
                    )
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        return ConnectProxyServer(channel: channel, state: state)
    }

    private init(channel: any Channel, state: NIOLockedValueBox<[Tunnel]>) {
        self.channel = channel
        self.state = state
        port = channel.localAddress?.port ?? 0
    }

    /// The proxy's URL, `http://127.0.0.1:PORT`.
    public var url: String { "http://127.0.0.1:\(port)" }

    /// Stops listening; open tunnels close with their connections.
    public func stop() async {
        try? await channel.close()
    }
}

/// Reads one `CONNECT` request, then relays bytes both ways between the client and the target.
private final class ConnectRequestHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let requiredAuthorization: String?
    private let record: NIOLockedValueBox<[ConnectProxyServer.Tunnel]>
    private var head = ByteBuffer()
    private var peer: (any Channel)?
    private var connecting = false

    init(requiredAuthorization: String?, record: NIOLockedValueBox<[ConnectProxyServer.Tunnel]>) {
        self.requiredAuthorization = requiredAuthorization
        self.record = record
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        if let peer {
            peer.writeAndFlush(bytes, promise: nil)
            return
        }
        head.writeBuffer(&bytes)
        guard !connecting, let text = head.getString(at: head.readerIndex, length: head.readableBytes),
            let end = text.range(of: "\r\n\r\n")
        else { return }
        connecting = true
        let lines = text[..<end.lowerBound].components(separatedBy: "\r\n")
        let parts = lines.first?.split(separator: " ") ?? []
        let authorization = lines.dropFirst().first { $0.lowercased().hasPrefix("proxy-authorization:") }
            .map { String($0.dropFirst("proxy-authorization:".count)).trimmingCharacters(in: .whitespaces) }
        guard parts.count == 3, parts[0] == "CONNECT", let colon = parts[1].lastIndex(of: ":"),
            let port = Int(parts[1][parts[1].index(after: colon)...])
        else { return reply(context, "400 Bad Request") }
        let target = String(parts[1])
        record.withLockedValue { $0.append(.init(target: target, authorization: authorization)) }
        if let requiredAuthorization, authorization != requiredAuthorization {
            return reply(context, "407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"test\"")
        }
        let host = String(parts[1][..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        guard host == "localhost" || host == "::1" || host.hasPrefix("127.") else {
            return reply(context, "403 Forbidden")
        }
        // Bytes after the request's blank line already belong to the tunnel.
        let headLength = text[..<end.upperBound].utf8.count
        head.moveReaderIndex(forwardBy: headLength)
        let client = context.channel
        let loopBoundContext = NIOLoopBound(context, eventLoop: context.eventLoop)
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        ClientBootstrap(group: context.eventLoop)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(RelayHandler(partner: client))
                }
            }
            .connect(host: host, port: port)
            .whenComplete { result in
                let context = loopBoundContext.value
                switch result {
                case .success(let channel):
                    handler.value.peer = channel
                    var established = context.channel.allocator.buffer(capacity: 64)
                    established.writeString("HTTP/1.1 200 Connection Established\r\n\r\n")
                    context.writeAndFlush(handler.value.wrapOutboundOut(established), promise: nil)
                    if handler.value.head.readableBytes > 0 {
                        channel.writeAndFlush(handler.value.head, promise: nil)
                    }
                case .failure:
                    handler.value.reply(context, "502 Bad Gateway")
                }
            }
    }

    func channelInactive(context: ChannelHandlerContext) {
        peer?.close(promise: nil)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    private func reply(_ context: ChannelHandlerContext, _ status: String) {
        var buffer = context.channel.allocator.buffer(capacity: 128)
        buffer.writeString("HTTP/1.1 \(status)\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(buffer)).whenComplete { _ in channel.close(promise: nil) }
    }
}

/// Copies what the target sends back to the client; closes the client when the target closes.
private final class RelayHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let partner: any Channel

    init(partner: any Channel) { self.partner = partner }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        partner.writeAndFlush(unwrapInboundIn(data), promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        partner.close(promise: nil)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
