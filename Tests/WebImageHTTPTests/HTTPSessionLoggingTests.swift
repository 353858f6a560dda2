import Foundation
import Logging
import Testing
import WebImageHTTP
import WebImageOrigin
import WebImageTestSupport

@Suite("HTTPSession's logger", .timeLimit(.minutes(1)))
struct HTTPSessionLoggingTests {
    /// Keeps the level and metadata of every record it is given.
    struct CapturingHandler: LogHandler {
        let records: Locked<[(level: Logger.Level, metadata: Logger.Metadata)]>
        var logLevel: Logger.Level
        var metadata: Logger.Metadata = [:]

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let merged = metadata.merging(event.metadata ?? [:]) { $1 }
            records.withLock { $0.append((event.level, merged)) }
        }
    }

    @Test(
        "A logger at debug level or below receives AsyncHTTPClient's request logs; one above it receives none",
        arguments: [Logger.Level.trace, .debug, .info]
    )
    func requestLogs(level: Logger.Level) async throws {
        let origin = try await OriginServer.start()
        origin.setRoute("/logged", OriginRoute(body: Data("logged".utf8)))
        let records = Locked<[(level: Logger.Level, metadata: Logger.Metadata)]>([])
        let logger = Logger(label: "test.http") { _ in CapturingHandler(records: records, logLevel: level) }
        let session = HTTPSession(logger: logger)
        do {
            let (data, _) = try await session.data(for: HTTPSession.Request(url: origin.url("/logged")))
            #expect(data == Data("logged".utf8))
        } catch {
            Issue.record("the request failed: \(error)")
        }
        try await session.shutdown()
        await origin.stop()
        // AsyncHTTPClient's records carry its `ahc-` metadata (connection, event loop, request).
        let requestLogs = records.value.filter { $0.metadata.keys.contains { $0.hasPrefix("ahc-") } }
        if level <= .debug {
            #expect(!requestLogs.isEmpty, "no AsyncHTTPClient log reached a \(level) logger")
            #expect(requestLogs.allSatisfy { $0.level >= level })
        } else {
            #expect(records.value.isEmpty)
        }
    }
}
