import Foundation
import Testing
import WebImageHTTP
import WebImageTestSupport

@testable import WebImageServer

/// Slow, silent and idle clients against a real proxy on 127.0.0.1: the read deadline, the
/// keep-alive timeout and the connection cap close what they must, and a new client is served.
@Suite("webimage serve: connections that time out and a cap that holds", .timeLimit(.minutes(2)))
struct ConnectionDefenceTests {
    /// The proxy with these connection limits.
    static func start(
        readRequest: Duration = .seconds(60),
        keepAlive: Duration = .seconds(60),
        maxConnections: Int = 512,
        metrics: Bool = false
    ) async throws -> ImageProxyServerTests.Fixture {
        try await ImageProxyServerTests.start(metrics: metrics) {
            $0.connectionLimits.readRequestTimeout = readRequest
            $0.connectionLimits.keepAliveTimeout = keepAlive
            $0.connectionLimits.maxConnections = maxConnections
        }
    }

    /// A metric's value from the proxy's exposition (summed over labels that match `prefix`).
    static func metric(_ fixture: ImageProxyServerTests.Fixture, _ prefix: String) -> Double {
        fixture.proxy.metrics.exposition().split(separator: "\n").filter { $0.hasPrefix(prefix) }
            .compactMap { $0.split(separator: " ").last.flatMap { Double($0) } }.reduce(0, +)
    }

    @Test("A client dripping its request head a byte at a time is closed at the read deadline")
    func slowHeadIsClosed() async throws {
        let fixture = try await Self.start(readRequest: .seconds(1))
        let slow = try RawClientConnection(port: fixture.server.port)
        defer { slow.close() }
        do {
            // Given: a head that never ends, a byte every 5 ms (none of them extends the deadline).
            let started = ContinuousClock.now
            var sent = 0
            let closed = await waitUntil(
                {
                    if slow.isClosedByPeer { return true }
                    slow.send(sent == 0 ? "GET /health HTTP/1.1\r\n" : "X")
                    sent += 1
                    return false
                },
                timeout: .seconds(30)
            )
            // Then: closed though it kept sending, after the deadline (not before it).
            #expect(closed, "still open after 30 s of dripping")
            #expect(ContinuousClock.now - started >= .milliseconds(900))
            #expect(!slow.received.contains("HTTP/1.1"), "no answer to a request that never ended")
            #expect(Self.metric(fixture, "webimage_connections_closed_total{reason=\"read_timeout\"}") >= 1)
            // And the server still answers a well-behaved client.
            let (response, _) = try await fixture.get(fixture.server.baseURL + "/health")
            #expect(response.statusCode == 200)
        } catch {
            Issue.record(error)
        }
        await fixture.stop()
    }

    @Test("Silent connections are closed at the read deadline; an idle kept-alive one at the keep-alive timeout")
    func silentAndIdleAreClosed() async throws {
        let fixture = try await Self.start(readRequest: .seconds(1), keepAlive: .seconds(1))
        let silent = try (0..<20).map { _ in try RawClientConnection(port: fixture.server.port) }
        let kept = try RawClientConnection(port: fixture.server.port)
        defer {
            for connection in silent { connection.close() }
            kept.close()
        }
        // Given: one connection that made a request and keeps its connection.
        kept.send("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        #expect(await waitUntil({ kept.received.contains("\r\n\r\n") }, timeout: .seconds(20)))
        #expect(kept.received.hasPrefix("HTTP/1.1 200"))
        #expect(!kept.isClosedByPeer, "a finished request keeps its connection")
        // Then: all of them are closed by the server.
        #expect(await waitUntil({ silent.allSatisfy(\.isClosedByPeer) }, timeout: .seconds(30)))
        #expect(await waitUntil({ kept.isClosedByPeer }, timeout: .seconds(30)))
        #expect(await waitUntil({ Self.metric(fixture, "webimage_connections_open ") == 0 }, timeout: .seconds(10)))
        await fixture.stop()
    }

    @Test("At --max-connections a new client takes the place of the longest-idle connection and is answered")
    func capEvictsTheLongestIdle() async throws {
        // Deadlines far away: only the cap can close anything here.
        let fixture = try await Self.start(maxConnections: 8)
        var silent: [RawClientConnection] = []
        defer { for connection in silent { connection.close() } }
        do {
            // Given: 20 silent connections against a cap of 8.
            for index in 0..<20 {
                silent.append(try RawClientConnection(port: fixture.server.port))
                // Counted before the next one opens: their order is the idle order (two event
                // loops may otherwise see them in another order on a busy machine).
                let counted = await waitUntil(
                    {
                        Self.metric(fixture, "webimage_connections_open ")
                            + Self.metric(fixture, "webimage_connections_closed_total{reason=\"evicted\"}")
                            >= Double(index + 1)
                    },
                    timeout: .seconds(20)
                )
                #expect(counted, "connection \(index + 1) was not counted")
            }
            #expect(await waitUntil({ silent.prefix(12).allSatisfy(\.isClosedByPeer) }, timeout: .seconds(20)))
            #expect(silent.suffix(8).allSatisfy { !$0.isClosedByPeer }, "the newest 8 stay")
            #expect(Self.metric(fixture, "webimage_connections_open ") <= 8)
            // When: a new client asks for /health, long before any deadline.
            let client = try RawClientConnection(port: fixture.server.port)
            defer { client.close() }
            client.send("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            // Then: answered; the longest-idle silent one made room.
            #expect(await waitUntil({ client.received.contains("\r\n\r\n") }, timeout: .seconds(20)))
            #expect(client.received.hasPrefix("HTTP/1.1 200"), "\(client.received)")
            #expect(silent[12].isClosedByPeer)
            #expect(Self.metric(fixture, "webimage_connections_closed_total{reason=\"evicted\"}") >= 13)
        } catch {
            Issue.record(error)
        }
        await fixture.stop()
    }

    @Test("The metrics listener closes silent connections at the read deadline too")
    func metricsListenerHoldsToo() async throws {
        let fixture = try await Self.start(readRequest: .seconds(1), metrics: true)
        do {
            let port = try #require(fixture.server.metricsPort)
            let silent = try (0..<5).map { _ in try RawClientConnection(port: port) }
            defer { for connection in silent { connection.close() } }
            #expect(await waitUntil({ silent.allSatisfy(\.isClosedByPeer) }, timeout: .seconds(30)))
            // A scrape still works.
            let (response, _) = try await fixture.get("http://127.0.0.1:\(port)/metrics")
            #expect(response.statusCode == 200)
        } catch {
            Issue.record(error)
        }
        await fixture.stop()
    }
}
