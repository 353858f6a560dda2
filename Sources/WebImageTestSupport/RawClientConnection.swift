import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A plain TCP connection to 127.0.0.1 for tests of what a server does to clients that
/// misbehave (silent, slow, idle): send bytes, collect what arrives, and see whether the server
/// closed it. Every check is non-blocking, so async tests poll it without holding a thread.
/// Closed by ``close()`` (call it on every path) or when released.
public final class RawClientConnection: Sendable {
    private let descriptor: Int32
    private let state = Mutex((received: [UInt8](), closedByPeer: false, closed: false))

    /// Connects to 127.0.0.1:`port` (loopback connects at once).
    /// - Throws: `POSIXError` when the socket cannot be made or the connection is refused.
    public init(port: Int) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            let code = errno
            Glibc.close(fd)
            throw POSIXError(POSIXErrorCode(rawValue: code) ?? .ECONNREFUSED)
        }
        descriptor = fd
    }

    deinit { close() }

    /// Sends `text`; `false` when the connection is closed (by either side).
    @discardableResult
    public func send(_ text: String) -> Bool {
        guard !state.withLock({ $0.closed }) else { return false }
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            == bytes.count
    }

    /// Whether the server closed the connection (end of stream or reset), reading what arrived
    /// before that.
    public var isClosedByPeer: Bool {
        drain()
        return state.withLock { $0.closedByPeer }
    }

    /// Everything received so far, as text.
    public var received: String {
        drain()
        return state.withLock { String(decoding: $0.received, as: UTF8.self) }
    }

    /// Closes the socket (once).
    public func close() {
        if claimClose() { Glibc.close(descriptor) }
    }

    /// Marks the connection closed; `true` for the one caller that must close the descriptor.
    private func claimClose() -> Bool {
        state.withLock { state -> Bool in
            defer { state.closed = true }
            return !state.closed
        }
    }

    /// Closes the socket with a reset (RST, as a client killed mid-request leaves it) instead of
    /// an orderly end of stream.
    public func reset() {
        guard claimClose() else { return }
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(descriptor, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        Glibc.close(descriptor)
    }

    private func drain() {
        state.withLock { state in
            guard !state.closed, !state.closedByPeer else { return }
            var buffer = [UInt8](repeating: 0, count: 16384)
            while true {
                let count = recv(descriptor, &buffer, buffer.count, Int32(MSG_DONTWAIT))
                if count > 0 {
                    state.received += buffer[0..<count]
                    continue
                }
                if count == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                    state.closedByPeer = true
                }
                return
            }
        }
    }
}
