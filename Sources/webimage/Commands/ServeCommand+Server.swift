import ArgumentParser
import Foundation
import WebImageServer

/// `serve`'s settings for the server around the proxy: how it holds connections and gives
/// memory back.
extension ServeCommand {
    /// `--free-memory-interval` (default 10 s); `nil` for 0, never.
    func memoryReleaseInterval(_ settings: ServeSettings) throws -> Duration? {
        let seconds = try settings.value(
            "free-memory-interval",
            flag: try ServeSettings.parsed(freeMemoryInterval, "free-memory-interval", Units.seconds),
            default: 10,
            imgproxy: ["IMGPROXY_FREE_MEMORY_INTERVAL"],
            parse: Units.seconds
        )
        return seconds > 0 ? .milliseconds(Int64(seconds * 1000)) : nil
    }

    /// The HTTP server's hold on client connections: `--read-request-timeout`,
    /// `--keep-alive-timeout` and `--max-connections`.
    func connectionLimits(_ settings: ServeSettings) throws -> ConnectionLimits {
        var limits = ConnectionLimits()
        limits.readRequestTimeout = .seconds(
            try settings.value(
                "read-request-timeout",
                flag: try ServeSettings.parsed(readRequestTimeout, "read-request-timeout", Units.positiveSeconds),
                default: limits.readRequestTimeout.seconds,
                imgproxy: ["IMGPROXY_READ_REQUEST_TIMEOUT"],
                parse: Units.positiveSeconds
            )
        )
        limits.keepAliveTimeout = .seconds(
            try settings.value(
                "keep-alive-timeout",
                flag: try ServeSettings.parsed(keepAliveTimeout, "keep-alive-timeout", Units.positiveSeconds),
                default: limits.keepAliveTimeout.seconds,
                imgproxy: ["IMGPROXY_KEEP_ALIVE_TIMEOUT"],
                parse: Units.positiveSeconds
            )
        )
        if let maxConnections = try settings.optional(
            "max-connections",
            flag: maxConnections,
            imgproxy: ["IMGPROXY_MAX_CLIENTS"],
            parse: ServeSettings.integer
        ) {
            guard maxConnections >= 1 else { throw ValidationError("--max-connections must be at least 1") }
            limits.maxConnections = maxConnections
        }
        return limits
    }
}
