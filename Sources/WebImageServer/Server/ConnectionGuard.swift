import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// One client connection's guard, in the pipeline after HTTP decoding: counts the connection
/// with the server's ``ConnectionLimiter`` (closing whichever connection it says must go), tells
/// it when the connection works and when it is idle, and closes a connection whose client has not
/// sent a whole request within ``ConnectionLimits/readRequestTimeout``. Bytes of an unfinished
/// head or body do not extend the deadline, so a client dripping a byte a second is closed too.
/// Event-loop bound, one per connection.
final class ConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let limiter: ConnectionLimiter
    private let readRequestTimeout: TimeAmount
    /// Where closes and the open count are recorded; `nil` for a listener not measured (metrics).
    private let metrics: ProxyMetrics?
    private var id: UInt64?
    private var registered = false
    private var requestsInProgress = 0
    private var readDeadline: Scheduled<Void>?

    init(limiter: ConnectionLimiter, readRequestTimeout: Duration, metrics: ProxyMetrics?) {
        self.limiter = limiter
        self.readRequestTimeout = TimeAmount(readRequestTimeout)
        self.metrics = metrics
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { register(context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        disarm()
    }

    func channelActive(context: ChannelHandlerContext) {
        register(context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        disarm()
        if let id {
            limiter.closed(id)
            metrics?.connectionsOpen(limiter.openCount)
        }
        id = nil
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            requestsInProgress += 1
            if requestsInProgress == 1, let id { limiter.becameBusy(id) }
            arm(context)  // the body, if any, must arrive in time too
        case .body:
            break
        case .end:
            disarm()
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data), requestsInProgress > 0 {
            requestsInProgress -= 1
            if requestsInProgress == 0, let id { limiter.becameIdle(id) }
        }
        context.write(data, promise: promise)
    }

    /// Counts the connection once, closing the connection the limiter names, and starts the first
    /// request's deadline.
    private func register(_ context: ChannelHandlerContext) {
        guard !registered else { return }
        registered = true
        switch limiter.opened(context.channel) {
        case .admitted(let id):
            self.id = id
        case .admittedEvicting(let id, let victim):
            self.id = id
            metrics?.closedConnection(.evicted)
            victim.close(promise: nil)
        case .refused:
            metrics?.closedConnection(.refused)
            context.close(promise: nil)
            return
        }
        metrics?.connectionsOpen(limiter.openCount)
        arm(context)
    }

    private func arm(_ context: ChannelHandlerContext) {
        guard readDeadline == nil else { return }
        let metrics = metrics
        readDeadline = context.eventLoop.assumeIsolated().scheduleTask(in: readRequestTimeout) { [weak self] in
            self?.readDeadline = nil
            metrics?.closedConnection(.readTimeout)
            context.close(promise: nil)
        }
    }

    private func disarm() {
        readDeadline?.cancel()
        readDeadline = nil
    }
}
