#if canImport(Glibc)
import Glibc

private let openFiles = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
#elseif canImport(Darwin)
import Darwin

private let openFiles = RLIMIT_NOFILE
#endif

/// How `webimage serve` holds its connections against slow, silent and idle clients, with
/// imgproxy's and nginx's defaults: a deadline for reading each request, an idle timeout between
/// requests, and a cap on open connections.
public struct ConnectionLimits: Sendable, Equatable {
    /// Time a client has to send a whole request, head and body, counted from the connection's
    /// opening (its first request) or from its request head (later ones): a client sending one
    /// byte a second is closed when it runs out. Default 10 s, imgproxy's
    /// `IMGPROXY_READ_REQUEST_TIMEOUT`.
    public var readRequestTimeout: Duration = .seconds(10)
    /// Time a kept-alive connection may wait for its next request (Hummingbird's idle timeout;
    /// bytes of an unfinished head do not count as activity). Default 10 s, imgproxy's
    /// `IMGPROXY_KEEP_ALIVE_TIMEOUT`.
    public var keepAliveTimeout: Duration = .seconds(10)
    /// Open client connections at most. A new connection past it closes the connection that has
    /// been idle the longest (silent, or waiting between requests), as nginx reuses idle
    /// connections when it runs out; when every connection is busy, the new one is closed at
    /// once. Default: ``defaultMaxConnections(descriptorLimit:)`` of the process's limit.
    public var maxConnections: Int

    /// The defaults, with `maxConnections` derived from the current descriptor limit.
    public init() {
        maxConnections = Self.defaultMaxConnections(descriptorLimit: DescriptorLimit.current)
    }

    /// A quarter of the descriptors (at least 64) stays free for origin connections, cache files
    /// and listeners; the rest, up to 4096, is for clients. With systemd's 1024: 768.
    public static func defaultMaxConnections(descriptorLimit: Int) -> Int {
        let reserved = max(64, descriptorLimit / 4)
        return max(1, min(4096, descriptorLimit - reserved))
    }
}

/// The process's open-file limit (`RLIMIT_NOFILE`).
public enum DescriptorLimit {
    /// The soft limit now (`Int.max` when unlimited).
    public static var current: Int {
        var limit = rlimit()
        guard getrlimit(openFiles, &limit) == 0 else { return 1024 }
        return Int(clamping: limit.rlim_cur)  // RLIM_INFINITY is the largest value: Int.max
    }

    /// Raises the soft limit to the hard one, as nginx's `worker_rlimit_nofile` and Go's runtime
    /// do (systemd starts services at 1024 soft, 524288 hard). Returns the soft limit after.
    @discardableResult
    public static func raiseToHardLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(openFiles, &limit) == 0 else { return current }
        if limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max
            _ = setrlimit(openFiles, &limit)
        }
        return current
    }
}
