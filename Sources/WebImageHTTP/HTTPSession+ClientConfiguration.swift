import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTPCompression

extension HTTPSession.Configuration {
    /// The AsyncHTTPClient configuration for these settings; `host` is the one host the client
    /// connects to, when the security policy checks connections per host; `proxy` the proxy its
    /// connections go through.
    func clientConfiguration(forHost host: String? = nil, proxy: Proxy? = nil) -> HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration()
        configuration.tlsConfiguration = securityPolicy.tlsConfiguration
        let checks = [connectionValidator.map(Self.addressCheck), securityPolicy.connectionCheck(forHost: host)]
            .compactMap { $0 }
        if !checks.isEmpty {
            // Runs when a connection is established, before any request is written on it.
            let check: @Sendable (any Channel) -> EventLoopFuture<Void> = { channel in
                var result = channel.eventLoop.makeSucceededVoidFuture()
                for check in checks { result = result.flatMap { check(channel) } }
                // A refused connection is closed here: the pool only forgets it.
                return result.flatMapErrorThrowing { error in
                    channel.close(promise: nil)
                    throw error
                }
            }
            configuration.http1_1ConnectionDebugInitializer = check
            configuration.http2ConnectionDebugInitializer = check
        }
        // Redirects are ours (decision hook, cycle detection, header rules).
        configuration.redirectConfiguration = .disallow
        // The read timeout is the session's own (ReadTimeoutWatchdog): one timer a session, not
        // one rescheduled on every read.
        configuration.timeout = .init(connect: connectTimeout.clampedForDeadline.timeAmount)
        var pool = HTTPClient.Configuration.ConnectionPool(
            idleTimeout: .seconds(60),
            concurrentHTTP1ConnectionsPerHostSoftLimit: maximumConnectionsPerHost
        )
        pool.retryConnectionEstablishment = false
        configuration.connectionPool = pool
        configuration.httpVersion = httpVersion == .http1Only ? .http1Only : .automatic
        configuration.decompression = decompressesResponses ? .enabled(limit: .ratio(100)) : .disabled
        configuration.tracing.tracer = tracer
        if let proxy {
            configuration.proxy = .server(
                host: proxy.host,
                port: proxy.port,
                authorization: proxy.credential.map { .basic(username: $0.user, password: $0.password) }
            )
        }
        return configuration
    }

    /// A connection check that asks `validator` about the connected address.
    private static func addressCheck(
        _ validator: @escaping @Sendable (String) -> String?
    ) -> @Sendable (any Channel) -> EventLoopFuture<Void> {
        { channel in
            let address = channel.remoteAddress?.ipAddress ?? "an unknown address"
            if let reason = validator(address) {
                return channel.eventLoop.makeFailedFuture(AddressNotAllowed(address: address, reason: reason))
            }
            return channel.eventLoop.makeSucceededVoidFuture()
        }
    }
}

/// A connection refused by ``HTTPSession/Configuration/connectionValidator``.
struct AddressNotAllowed: Error, CustomStringConvertible {
    let address: String
    let reason: String
    var description: String { "the connection to \(address) is not allowed: \(reason)" }
}
