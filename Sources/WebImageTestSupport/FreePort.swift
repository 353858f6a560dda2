import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A TCP port free on 127.0.0.1 now: for child processes that need a port number on their
/// command line (the port is released before they bind it; another process could take it in
/// between, which tests accept).
public enum FreePort {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// Binds port 0 on 127.0.0.1, reads the port given, and closes the socket.
    public static func loopback() throws -> Int {
        let reserved = try ClosedPort()
        reserved.release()
        return reserved.port
    }
}

/// A port on 127.0.0.1 that refuses every connection for as long as this value holds it: a socket
/// bound to it that never listens, so no other server (another test's, running in parallel) can
/// take the port. Connecting gets a reset (`ECONNREFUSED`). A port taken from a stopped server
/// gives no such promise: port 0 may hand it to the next listener at once.
///
/// `release()` frees the port (deinit does too); it may be called from any thread, more than once.
public final class ClosedPort: Sendable {
    /// The port number, in host order.
    public let port: Int
    private let socket: Int32
    private let released = Atomic<Bool>(false)

    /// Binds a socket to a port the kernel picks on 127.0.0.1 without listening on it.
    public init() throws {
        #if canImport(Glibc)
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let socket = Darwin.socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard socket >= 0 else { throw FreePort.Failure(description: "socket() failed: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) }
        }
        guard bound == 0 else {
            let cause = errno
            close(socket)
            throw FreePort.Failure(description: "bind() failed: errno \(cause)")
        }
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) }
        }
        guard named == 0 else {
            let cause = errno
            close(socket)
            throw FreePort.Failure(description: "getsockname() failed: errno \(cause)")
        }
        self.socket = socket
        self.port = Int(UInt16(bigEndian: address.sin_port))
    }

    /// Closes the socket: from then on the port is free for anyone. Calling it again does nothing.
    public func release() {
        guard !released.exchange(true, ordering: .relaxed) else { return }
        close(socket)
    }

    deinit { release() }
}
