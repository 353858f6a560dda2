import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS
import Synchronization
@_spi(WebImageInternals) import WebImageCoders

/// The connection behind an ``HTTPStreamTask``: its channel, the bytes received and not yet
/// read, and the reads, writes and handshake waiting on it.
///
/// Every continuation is resumed outside the lock. The channel handler only records bytes and
/// events here and resumes waiters: nothing blocks its event loop.
final class StreamConnection: Sendable {
    private typealias Outcome<Value> = Result<Value, HTTPSessionError>

    private enum Phase {
        case waiting([HandOffContinuation<Outcome<any Channel>, Never>])
        case connected(any Channel)
        case failed(HTTPSessionError)
    }

    private struct Reader {
        let id: UInt64
        let min: Int
        let max: Int
        let continuation: HandOffContinuation<Outcome<(data: Data, atEOF: Bool)>, Never>
        var timer: Scheduled<Void>?
    }

    private struct Handshake {
        let continuation: HandOffContinuation<Outcome<Void>, Never>
        let check: (@Sendable (any Channel) -> EventLoopFuture<Void>)?
        var timer: Scheduled<Void>?
    }

    private struct State {
        var phase = Phase.waiting([])
        var received = Data()
        var endOfStream = false
        /// Set once the connection broke or was cancelled; reads fail with it once `received`
        /// cannot satisfy them.
        var failure: HTTPSessionError?
        var readers: [Reader] = []
        var nextReader: UInt64 = 0
        var handshake: Handshake?
    }

    /// `tcp://host:port`, the subject of error messages.
    let url: URL
    private let state = Protected(State())

    /// Where the channel and the read timers run (``HTTPSession/Configuration/eventLoopGroup``).
    private let eventLoopGroup: any EventLoopGroup

    init(label: String, eventLoopGroup: any EventLoopGroup) {
        url = URL(string: "tcp://\(label)") ?? URL(fileURLWithPath: "/")
        self.eventLoopGroup = eventLoopGroup
    }

    // MARK: Connecting

    func connect(host: String, port: Int, configuration: HTTPSession.Configuration) async {
        // On one loop of the group: ClientBootstrap traps on a group that is not SwiftNIO's own
        // (a wrapper, say), and validates a loop without trapping.
        let bootstrap = ClientBootstrap(validatingGroup: eventLoopGroup.next())?
            .connectTimeout(configuration.connectTimeout.timeAmount)
            .channelOption(.allowRemoteHalfClosure, value: true)
            .channelOption(.autoRead, value: false)
            .channelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(StreamInboundHandler(connection: self))
                }
            }
        let outcome: Outcome<any Channel>
        var refused: (any Channel)?
        do {
            guard let bootstrap else {
                throw HTTPSession.unusableEventLoops("\(type(of: eventLoopGroup.next()))", url: url)
            }
            let channel = try await bootstrap.connect(host: host, port: port).get()
            let address = channel.remoteAddress?.ipAddress ?? "an unknown address"
            if let reason = configuration.connectionValidator?(address) {
                refused = channel  // closed once the failure is recorded, so no read sees a clean end
                outcome = .failure(
                    HTTPSession.map(AddressNotAllowed(address: address, reason: reason), url: url)
                )
            } else {
                outcome = .success(channel)
            }
        } catch {
            outcome = .failure(HTTPSession.map(error, url: url))
        }
        let (waiters, lateChannel) = state.withLock {
            state -> ([HandOffContinuation<Outcome<any Channel>, Never>], (any Channel)?) in
            guard case .waiting(let waiters) = state.phase else {
                // Cancelled while connecting: the new channel is not wanted.
                return ([], try? outcome.get())
            }
            switch outcome {
            case .success(let channel): state.phase = .connected(channel)
            case .failure(let error):
                state.phase = .failed(error)
                state.failure = error
            }
            return (waiters, nil)
        }
        lateChannel?.close(promise: nil)
        refused?.close(promise: nil)
        for waiter in waiters { waiter.resume(returning: outcome) }
        if case .failure = outcome { settleReaders() } else { pump() }
    }

    /// The channel once connected.
    private func channel() async throws(HTTPSessionError) -> any Channel {
        let outcome = await withHandOffContinuation {
            (continuation: HandOffContinuation<Outcome<any Channel>, Never>) in
            let now = state.withLock { state -> Outcome<any Channel>? in
                switch state.phase {
                case .connected(let channel): return .success(channel)
                case .failed(let error): return .failure(error)
                case .waiting(var waiters):
                    waiters.append(continuation)
                    state.phase = .waiting(waiters)
                    return nil
                }
            }
            if let now { continuation.resume(returning: now) }
        }
        return try outcome.get()
    }

    private var connectedChannel: (any Channel)? {
        state.withLock { if case .connected(let channel) = $0.phase { channel } else { nil } }
    }

    // MARK: Reading

    func read(min: Int, max: Int, timeout: Duration) async throws(HTTPSessionError) -> (data: Data, atEOF: Bool) {
        let id = state.withLock { state in
            state.nextReader += 1
            return state.nextReader
        }
        let outcome = await withTaskCancellationHandler {
            await withHandOffContinuation {
                (continuation: HandOffContinuation<Outcome<(data: Data, atEOF: Bool)>, Never>) in
                let queued = state.withLock { state -> Bool in
                    guard !Task.isCancelled else { return false }
                    state.readers.append(Reader(id: id, min: min, max: max, continuation: continuation))
                    return true
                }
                guard queued else { return continuation.resume(returning: .failure(.cancelled(url))) }
                let timer = eventLoopGroup.next().scheduleTask(in: timeout.timeAmount) {
                    [self] in
                    end(
                        reader: id,
                        with: HTTPSessionError(
                            .timedOut,
                            url: url,
                            message: "\(url.absoluteString): the read timed out"
                        )
                    )
                }
                let stillWaiting = state.withLock { state -> Bool in
                    guard let index = state.readers.firstIndex(where: { $0.id == id }) else { return false }
                    state.readers[index].timer = timer
                    return true
                }
                if !stillWaiting { timer.cancel() }
                settleReaders()
                pump()
            }
        } onCancel: {
            end(reader: id, with: .cancelled(url))
        }
        return try outcome.get()
    }

    /// Fails one waiting read (timed out or cancelled); the bytes stay for the next.
    private func end(reader id: UInt64, with error: HTTPSessionError) {
        let reader = state.withLock { state -> Reader? in
            guard let index = state.readers.firstIndex(where: { $0.id == id }) else { return nil }
            return state.readers.remove(at: index)
        }
        reader?.timer?.cancel()
        reader?.continuation.resume(returning: .failure(error))
        settleReaders()  // the next read may be satisfiable now
    }

    /// Answers the waiting reads, in order, as far as the received bytes (or the end of the
    /// stream, or a failure) allow.
    private func settleReaders() {
        let answered = state.withLock { state -> [(Reader, Outcome<(data: Data, atEOF: Bool)>)] in
            var answered: [(Reader, Outcome<(data: Data, atEOF: Bool)>)] = []
            while let reader = state.readers.first {
                let available = state.received.count
                if available >= reader.min || (state.endOfStream && state.failure == nil) {
                    let count = Swift.min(available, reader.max)
                    let data = state.received.prefix(count)
                    state.received.removeFirst(count)
                    let atEOF = state.endOfStream && state.received.isEmpty
                    answered.append((state.readers.removeFirst(), .success((Data(data), atEOF))))
                } else if let failure = state.failure {
                    answered.append((state.readers.removeFirst(), .failure(failure)))
                } else {
                    break
                }
            }
            return answered
        }
        for (reader, outcome) in answered {
            reader.timer?.cancel()
            reader.continuation.resume(returning: outcome)
        }
    }

    /// Asks the socket for more bytes when a read (or a handshake) waits for them.
    private func pump() {
        if wantsBytes, let channel = connectedChannel { channel.read() }
    }

    /// Whether someone waits for bytes that have not arrived.
    var wantsBytes: Bool {
        state.withLock { state in
            guard state.failure == nil, !state.endOfStream else { return false }
            return state.handshake != nil || !state.readers.isEmpty
        }
    }

    // MARK: Writing

    func write(_ data: Data, timeout: Duration) async throws(HTTPSessionError) {
        let channel = try await channel()
        let timedOut = Atomic<Bool>(false)
        let timer = channel.eventLoop.scheduleTask(in: timeout.timeAmount) {
            timedOut.store(true, ordering: .relaxed)
            channel.close(promise: nil)
        }
        do {
            try await channel.writeAndFlush(ByteBuffer(bytes: data)).get()
            timer.cancel()
        } catch {
            timer.cancel()
            if timedOut.load(ordering: .relaxed) {
                throw HTTPSessionError(.timedOut, url: url, message: "\(url.absoluteString): the write timed out")
            }
            throw state.withLock { $0.failure } ?? HTTPSession.map(error, url: url)
        }
    }

    // MARK: TLS

    func startTLS(host: String, policy: SecurityPolicy, timeout: Duration) async throws(HTTPSessionError) {
        let channel = try await channel()
        let context: NIOSSLContext
        do {
            context = try NIOSSLContext(configuration: policy.tlsConfiguration)
        } catch {
            throw HTTPSession.map(error, url: url)
        }
        // SNI names a host, never an address.
        let serverName = (try? SocketAddress(ipAddress: host, port: 0)) == nil ? host : nil
        let check = policy.connectionCheck(forHost: host)
        let outcome = await withHandOffContinuation { (continuation: HandOffContinuation<Outcome<Void>, Never>) in
            let refusal = state.withLock { state -> HTTPSessionError? in
                if let failure = state.failure { return failure }
                guard state.handshake == nil else {
                    return HTTPSessionError(
                        .networkError,
                        url: url,
                        message: "\(url.absoluteString): TLS was already started"
                    )
                }
                state.handshake = Handshake(continuation: continuation, check: check)
                return nil
            }
            if let refusal { return continuation.resume(returning: .failure(refusal)) }
            let timer = channel.eventLoop.scheduleTask(in: timeout.timeAmount) { [self] in
                finishHandshake(
                    .failure(
                        HTTPSessionError(
                            .timedOut,
                            url: url,
                            message: "\(url.absoluteString): the TLS handshake timed out"
                        )
                    )
                )
                channel.close(promise: nil)
            }
            state.withLock { $0.handshake?.timer = timer }
            // The handler is made on the channel's loop, where it lives (it is not Sendable).
            channel.eventLoop.submit {
                let handler = try NIOSSLClientHandler(context: context, serverHostname: serverName)
                try channel.pipeline.syncOperations.addHandler(handler, position: .first)
            }.whenComplete { [self] result in
                if case .failure(let error) = result { finishHandshake(.failure(HTTPSession.map(error, url: url))) }
                pump()
            }
        }
        try outcome.get()
    }

    /// The handshake ended: run the policy's checks on success, then answer its waiter.
    func handshakeCompleted(on channel: any Channel) {
        guard let check = state.withLock({ $0.handshake?.check }) else { return finishHandshake(.success(())) }
        check(channel).whenComplete { [self] result in
            switch result {
            case .success: finishHandshake(.success(()))
            case .failure(let error):
                let mapped = HTTPSession.map(error, url: url)
                fail(mapped)
                channel.close(promise: nil)
            }
        }
    }

    private func finishHandshake(_ outcome: Outcome<Void>) {
        guard
            let handshake = state.withLock({ state -> Handshake? in
                defer { state.handshake = nil }
                return state.handshake
            })
        else { return }
        handshake.timer?.cancel()
        handshake.continuation.resume(returning: outcome)
    }

    // MARK: Events from the channel

    func received(_ buffer: ByteBuffer) {
        state.withLock { $0.received.append(contentsOf: buffer.readableBytesView) }
        settleReaders()
    }

    func reachedEndOfStream() {
        state.withLock { $0.endOfStream = true }
        settleReaders()
        finishHandshake(
            .failure(
                HTTPSessionError(
                    .connectionLost,
                    url: url,
                    message: "\(url.absoluteString): the server closed the connection during the TLS handshake"
                )
            )
        )
    }

    /// The connection broke (or was cancelled): every waiter fails with `error`.
    func fail(_ error: HTTPSessionError) {
        let waiters = state.withLock { state -> [HandOffContinuation<Outcome<any Channel>, Never>] in
            if state.failure == nil { state.failure = error }
            guard case .waiting(let waiters) = state.phase else { return [] }
            state.phase = .failed(error)
            return waiters
        }
        for waiter in waiters { waiter.resume(returning: .failure(error)) }
        finishHandshake(.failure(error))
        settleReaders()
    }

    // MARK: Closing

    func shutdown(_ mode: CloseMode) {
        if mode == .input {
            state.withLock { $0.endOfStream = true }
            settleReaders()
        }
        // A socket that cannot close one side alone (or is gone) has nothing left to close.
        connectedChannel?.close(mode: mode, promise: nil)
    }

    func cancel() {
        fail(.cancelled(url))
        connectedChannel?.close(promise: nil)
    }
}

/// Hands a stream task's bytes and events to its ``StreamConnection``; reads from the socket only
/// while someone waits for bytes.
private final class StreamInboundHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let connection: StreamConnection

    init(connection: StreamConnection) { self.connection = connection }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        connection.received(unwrapInboundIn(data))
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if connection.wantsBytes { context.read() }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? TLSUserEvent, case .handshakeCompleted = event {
            connection.handshakeCompleted(on: context.channel)
            if connection.wantsBytes { context.read() }
        } else if let event = event as? ChannelEvent, event == .inputClosed {
            connection.reachedEndOfStream()
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        connection.reachedEndOfStream()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        connection.fail(HTTPSession.map(error, url: connection.url))
        context.close(promise: nil)
    }
}
