import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL

/// A line-based TCP server on 127.0.0.1 for stream-task tests. It greets each connection with
/// `hello`, then answers each line:
///
/// - `STARTTLS`: answers `GO`, then speaks TLS with ``tls``'s certificate (STARTTLS, as SMTP).
/// - `BIG n`: sends `n` bytes (`i % 251` for the i-th).
/// - `WAIT`: answers nothing.
/// - `BYE`: answers `bye`, then closes its writing side.
/// - anything else: sends it back, with its newline.
///
/// ``lines`` records what it received, and `<eof>` when a client's connection ended (its writing
/// side closed, or the whole connection).
public final class LineServer: Sendable {
    /// The port it listens on (127.0.0.1).
    public let port: Int
    private let channel: any Channel
    private let received: NIOLockedValueBox<[String]>

    /// Every line received so far, in order, from every connection.
    public var lines: [String] { received.withLockedValue { $0 } }

    /// Starts the server at a free port; `tls` is what `STARTTLS` switches to (required for it).
    public static func start(tls: OriginServer.TLS? = nil) async throws -> LineServer {
        let received = NIOLockedValueBox<[String]>([])
        let context = try tls.map { try NIOSSLContext(configuration: try $0.serverConfiguration()) }
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.allowRemoteHalfClosure, value: true)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(LineHandler(tls: context, record: received))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        return LineServer(channel: channel, received: received)
    }

    private init(channel: any Channel, received: NIOLockedValueBox<[String]>) {
        self.channel = channel
        self.received = received
        port = channel.localAddress?.port ?? 0
    }

    /// Stops listening; open connections stay until their clients close them.
    public func stop() async {
        try? await channel.close()
    }
}

private final class LineHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let tls: NIOSSLContext?
    private let record: NIOLockedValueBox<[String]>
    private var pending = ""
    private var sawEnd = false

    init(tls: NIOSSLContext?, record: NIOLockedValueBox<[String]>) {
        self.tls = tls
        self.record = record
    }

    func channelActive(context: ChannelHandlerContext) {
        send("hello\n", context)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        pending += String(buffer: unwrapInboundIn(data))
        while let newline = pending.firstIndex(of: "\n") {
            let line = String(pending[..<newline])
            pending.removeSubrange(...newline)
            record.withLockedValue { $0.append(line) }
            answer(line, context)
        }
    }

    private func answer(_ line: String, _ context: ChannelHandlerContext) {
        switch line {
        case "STARTTLS":
            send("GO\n", context)
            guard let tls else { return context.close(promise: nil) }
            try? context.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls), position: .first)
        case "WAIT":
            break
        case "BYE":
            send("bye\n", context)
            context.close(mode: .output, promise: nil)
        case _ where line.hasPrefix("BIG "):
            let count = Int(line.dropFirst(4)) ?? 0
            context.writeAndFlush(
                wrapOutboundOut(ByteBuffer(bytes: (0..<count).map { UInt8($0 % 251) })),
                promise: nil
            )
        default:
            send(line + "\n", context)
        }
    }

    private func send(_ text: String, _ context: ChannelHandlerContext) {
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: text)), promise: nil)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed { recordEnd() }
        context.fireUserInboundEventTriggered(event)
    }

    /// A client's end of stream arrives as `inputClosed`, or, once this side has closed its own
    /// output (`BYE`), as the channel closing.
    func channelInactive(context: ChannelHandlerContext) {
        recordEnd()
        context.fireChannelInactive()
    }

    private func recordEnd() {
        guard !sawEnd else { return }
        sawEnd = true
        record.withLockedValue { $0.append("<eof>") }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
