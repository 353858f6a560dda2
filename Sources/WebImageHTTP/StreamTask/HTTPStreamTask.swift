import AsyncHTTPClient
import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import Synchronization

/// A TCP connection to read and write bytes on, with TLS on request (NSURLSessionStreamTask).
///
/// ```swift
/// let stream = session.streamTask(withHostName: "mail.example.com", port: 587)
/// stream.resume()
/// let (greeting, _) = try await stream.readData(ofMinLength: 1, maxLength: 4096, timeout: .seconds(10))
/// try await stream.write(Data("STARTTLS\r\n".utf8), timeout: .seconds(10))
/// try await stream.startSecureConnection()
/// for try await chunk in stream.chunks { … }
/// ```
///
/// The task starts suspended; reads and writes made before ``resume()`` wait for the connection.
/// The session's connect timeout, ``HTTPSession/Configuration/connectionValidator`` and
/// ``SecurityPolicy`` (trust, pins, client identity, minimum TLS version) apply; proxies do
/// not (the connection is direct). Reads are served in the order they were asked for; bytes are
/// read from the socket only while a read waits (TCP flow control holds the server back
/// otherwise). Thread-safe; no method blocks a thread.
public final class HTTPStreamTask: Sendable, CustomStringConvertible {
    /// The host and port the task connects to.
    public let host: String
    public let port: Int
    /// Unique among stream tasks in the process.
    public let taskIdentifier: Int
    private let configuration: HTTPSession.Configuration
    private let connection: StreamConnection
    private let started = Atomic<Bool>(false)

    init(host: String, port: Int, configuration: HTTPSession.Configuration) {
        self.host = host
        self.port = port
        self.configuration = configuration
        taskIdentifier = Self.nextIdentifier.wrappingAdd(1, ordering: .relaxed).oldValue
        connection = StreamConnection(
            label: "\(host):\(port)",
            eventLoopGroup: configuration.eventLoops
        )
    }

    private static let nextIdentifier = Atomic<Int>(1_000_000_000)

    /// A task dropped without ``cancel()`` closes its connection.
    deinit { connection.cancel() }

    public var description: String { "HTTPStreamTask #\(taskIdentifier) \(host):\(port)" }

    /// Connects (once). Reads and writes wait for it; a failure to connect fails them.
    public func resume() {
        guard !started.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let (host, port, configuration, connection) = (host, port, configuration, connection)
        Task { await connection.connect(host: host, port: port, configuration: configuration) }
    }

    /// Starts TLS on the connection (after the bytes written so far), with the session's
    /// security policy, and returns once the handshake and the policy's checks have passed.
    /// Bytes received before the handshake and not read yet stay readable.
    /// - Throws: `serverCertificateUntrusted`, `clientCertificateRejected`, `timedOut`
    ///   (the session's connect timeout), `cancelled`, or the connection's failure.
    public func startSecureConnection() async throws(HTTPSessionError) {
        try await connection.startTLS(
            host: host,
            policy: configuration.securityPolicy,
            timeout: configuration.connectTimeout
        )
    }

    /// Reads at least `minLength` bytes (fewer only at the end of the stream) and at most
    /// `maxLength`; `atEOF` is `true` once the server has closed its side and every byte was
    /// read. Cancelling the calling Swift task ends this read with `cancelled` and leaves the
    /// connection open.
    /// - Throws: `timedOut` when `timeout` passes first (the bytes stay for the next read),
    ///   `cancelled`, `invalidURL` for lengths out of order, or the connection's failure.
    public func readData(
        ofMinLength minLength: Int,
        maxLength: Int,
        timeout: Duration
    ) async throws(HTTPSessionError) -> (data: Data, atEOF: Bool) {
        guard minLength >= 0, maxLength >= 1, minLength <= maxLength else {
            throw HTTPSessionError(
                .invalidURL,
                url: nil,
                message:
                    "\(description): read lengths must satisfy 0 ≤ min ≤ max and max ≥ 1, got \(minLength) and \(maxLength)"
            )
        }
        return try await connection.read(min: minLength, max: maxLength, timeout: timeout)
    }

    /// Writes `data` and returns once it has been handed to the operating system.
    /// - Throws: `timedOut` when `timeout` passes first (the connection is then closed: how much
    ///   was sent is unknown), `cancelled`, or the connection's failure.
    public func write(_ data: Data, timeout: Duration) async throws(HTTPSessionError) {
        try await connection.write(data, timeout: timeout)
    }

    /// The received bytes as they arrive, up to 64 KiB a chunk, ending at the end of the stream:
    /// reads of their own, in turn with any other reads. Each wait lasts at most the session's
    /// read timeout.
    public var chunks: AsyncThrowingStream<Data, any Error> {
        let (connection, timeout) = (connection, configuration.readTimeout)
        return AsyncThrowingStream {
            let (data, atEOF) = try await connection.read(min: 1, max: 65_536, timeout: timeout)
            return data.isEmpty && atEOF ? nil : data
        }
    }

    /// Closes the writing side (a TCP half-close): the server reads the end of the stream and
    /// may still answer.
    public func closeWrite() { connection.shutdown(.output) }

    /// Stops reading: waiting reads end at the end of the stream.
    public func closeRead() { connection.shutdown(.input) }

    /// Closes the connection; every waiting and later read, write or handshake fails with
    /// `cancelled`.
    public func cancel() { connection.cancel() }
}

extension HTTPSession {
    /// A stream task to `host`:`port` (NSURLSession's `streamTask(withHostName:port:)`). It
    /// starts suspended: call ``HTTPStreamTask/resume()``.
    public func streamTask(withHostName host: String, port: Int) -> HTTPStreamTask {
        HTTPStreamTask(host: host, port: port, configuration: configuration)
    }
}
