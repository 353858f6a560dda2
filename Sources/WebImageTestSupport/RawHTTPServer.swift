import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A loopback server that answers requests with raw bytes, for responses a well-behaved
/// framework refuses to send (a 304 declaring a `Content-Length`, a kept-alive connection closed
/// as a request arrives). One thread, one connection at a time; `stop()` ends it (call it on
/// every path).
public final class RawHTTPServer: Sendable {
    /// Where a request arrived: the connection (counted from 0 in order of acceptance) and the
    /// request on it (from 0).
    public struct Arrival: Sendable, Equatable {
        public var connection: Int
        public var request: Int

        public init(connection: Int, request: Int) {
            self.connection = connection
            self.request = request
        }
    }

    /// The port it listens on (127.0.0.1).
    public let port: Int
    private let listener: Int32
    private let arrivals = Locked<[Arrival]>([])

    /// Every request received so far, in order.
    public var received: [Arrival] { arrivals.value }

    /// Starts on 127.0.0.1, a free port; each request gets `response`.
    public convenience init(response: Data) throws {
        try self.init { _ in response }
    }

    /// Starts on 127.0.0.1, a free port; each request gets what `respond` returns for where it
    /// arrived, or `nil`: the connection is closed without an answer.
    public init(respond: @escaping @Sendable (Arrival) -> Data?) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(fd, 8) == 0 else {
            close(fd)
            throw POSIXError(.EADDRINUSE)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        listener = fd
        let arrivals = arrivals
        let thread = Thread {
            var connection = 0
            while true {
                let client = accept(fd, nil, nil)
                guard client >= 0 else { return }  // the listener was shut down
                var buffer = [UInt8](repeating: 0, count: 65536)
                var received: [UInt8] = []
                var request = 0
                // Answer each request head on the connection as `respond` says.
                serving: while true {
                    let count = read(client, &buffer, buffer.count)
                    guard count > 0 else { break }
                    received += buffer[0..<count]
                    while let end = received.firstRange(of: [13, 10, 13, 10]) {
                        received.removeSubrange(0..<end.upperBound)
                        let arrival = Arrival(connection: connection, request: request)
                        arrivals.withLock { $0.append(arrival) }
                        request += 1
                        guard let response = respond(arrival) else { break serving }
                        _ = response.withUnsafeBytes { write(client, $0.baseAddress, $0.count) }
                    }
                }
                close(client)
                connection += 1
            }
        }
        thread.start()
    }

    /// `http://127.0.0.1:PORT` + `path`.
    public func url(_ path: String) -> URL { URL(string: "http://127.0.0.1:\(port)\(path)")! }

    /// Stops accepting; the serving thread ends.
    public func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }
}
