import Foundation
import Testing
import WebImage
import WebImageCoders
import WebImageHTTP
import WebImageOrigin
import WebImageTestSupport

@testable import WebImageServer

/// The proxy under load, over HTTP: workers and the queue, shared work, clients that leave,
/// shutdown with requests in flight, the processing timeout and `/metrics`.
@Suite("webimage serve: load, sharing, cancellation and metrics", .timeLimit(.minutes(3)))
struct ProxyLoadTests {
    typealias Fixture = ImageProxyServerTests.Fixture

    /// Serves the fixture's photo at `path` once the returned gate opens.
    static func gatedPhoto(_ fixture: Fixture, at path: String) async throws -> OriginGate {
        let gate = OriginGate()
        let (_, photo) = try await fixture.get(fixture.origin.url("/photo.jpg").absoluteString)
        fixture.origin.setRoute(path, .data(photo, contentType: "image/jpeg", behavior: .init(gate: gate)))
        return gate
    }

    static func errorCode(_ body: Data) -> String? {
        let object = try? JSONSerialization.jsonObject(with: body) as? [String: [String: String]]
        return object?["error"]?["code"]
    }

    @Test(
        "Past the workers and the queue: 429 with Retry-After (imgproxy's status), at once; the working request still succeeds"
    )
    func queueFull() async throws {
        let fixture = try await ImageProxyServerTests.start {
            $0.workers = 1
            $0.queueLimit = 0
        }
        defer { Task { await fixture.stop() } }
        let gate = try await Self.gatedPhoto(fixture, at: "/held.jpg")
        let working = Task { try await fixture.get(fixture.url("w:100", "/held.jpg")) }
        #expect(await waitUntil { fixture.proxy.load.working == 1 })
        let (busy, body) = try await fixture.get(fixture.url("w:200", "/photo.jpg"))
        #expect(busy.statusCode == 429)
        #expect(busy.headers[.retryAfter] == "1")
        #expect(Self.errorCode(body) == "busy")
        gate.open()
        let (answer, _) = try await working.value
        #expect(answer.statusCode == 200)
        // Free again.
        let (later, _) = try await fixture.get(fixture.url("w:200", "/photo.jpg"))
        #expect(later.statusCode == 200)
        await fixture.stop()
    }

    @Test("Eight identical concurrent requests: one origin request, one encode, the same bytes for all")
    func sharedWork() async throws {
        let fixture = try await ImageProxyServerTests.start(metrics: true)
        defer { Task { await fixture.stop() } }
        let gate = try await Self.gatedPhoto(fixture, at: "/popular.jpg")
        let url = fixture.url("rs:fill:120:80", "/popular.jpg", suffix: "@png")
        let requests = (0..<8).map { _ in Task { try await fixture.get(url) } }
        #expect(await waitUntil { fixture.proxy.requestsAwaitingAnswers == 8 })
        gate.open()
        var bodies: Set<Data> = []
        for request in requests {
            let (response, body) = try await request.value
            #expect(response.statusCode == 200)
            bodies.insert(body)
        }
        #expect(bodies.count == 1)
        #expect(fixture.origin.requestCount(for: "/popular.jpg") == 1)
        let metrics = try await Self.metrics(fixture)
        #expect(metrics.contains("webimage_coalesced_requests_total 7"), "\(metrics)")
        #expect(metrics.contains(#"webimage_stage_duration_seconds_count{stage="encode"} 1"#), "\(metrics)")
        await fixture.stop()
    }

    @Test("A client that goes away cancels its request: the worker is freed and the origin fetch stops")
    func clientDisconnect() async throws {
        let fixture = try await ImageProxyServerTests.start(metrics: true) { $0.workers = 1 }
        defer { Task { await fixture.stop() } }
        fixture.origin.setRoute("/stalled.jpg", .data(Data(), contentType: "image/jpeg", behavior: .init(stall: true)))
        let client = Task { try await fixture.get(fixture.url("w:100", "/stalled.jpg")) }
        #expect(await waitUntil { fixture.proxy.load.working == 1 && fixture.origin.currentConcurrentRequests == 1 })
        client.cancel()
        _ = await client.result
        // The origin stalls forever: only the cancellation frees the worker, and the fetch nobody
        // else wants is cancelled too, closing its connection to the origin.
        // The fixture's download timeout (a minute) is far off: only the cancellation can do it.
        #expect(await waitUntil({ fixture.proxy.load.working == 0 }, timeout: .seconds(3)))
        #expect(await waitUntil({ fixture.origin.connectionsClosedByClient == 1 }, timeout: .seconds(3)))
        let metrics = try await Self.metrics(fixture)
        #expect(metrics.contains(#"webimage_requests_total{status="499"} 1"#), "\(metrics)")
        let (next, _) = try await fixture.get(fixture.url("w:100", "/photo.jpg"))
        #expect(next.statusCode == 200)
        await fixture.stop()
    }

    @Test("Stopping lets a request in flight finish, then the server is gone")
    func gracefulShutdown() async throws {
        let fixture = try await ImageProxyServerTests.start()
        defer { Task { await fixture.stop() } }
        let gate = try await Self.gatedPhoto(fixture, at: "/slow.jpg")
        let inFlight = Task { try await fixture.get(fixture.url("w:100", "/slow.jpg")) }
        #expect(await waitUntil { fixture.proxy.load.working == 1 })
        let stopping = Task { await fixture.server.stop() }
        try await Task.sleep(for: .milliseconds(100))
        gate.open()
        let (response, body) = try await inFlight.value
        #expect(response.statusCode == 200)
        #expect(try ImageCodersManager.shared.decode(body).width == 100)
        await stopping.value
        await #expect(throws: HTTPSessionError.self) { try await fixture.get(fixture.url("w:100", "/photo.jpg")) }
        await fixture.stop()
    }

    @Test(
        "Stopping with a grace period: requests still queued near its end get 503 with Retry-After and Connection: close"
    )
    func queuedRequestsAnsweredAtShutdown() async throws {
        // 12 s: the queued requests are answered 3 s before its end (a quarter of it, at most
        // 3 s), time enough for the answers on a busy machine.
        let fixture = try await ImageProxyServerTests.start(gracePeriod: .seconds(12)) {
            $0.workers = 1
            $0.queueLimit = 8
        }
        defer { Task { await fixture.stop() } }
        // Given: the only worker held by a source that does not come, three requests queued.
        let gate = try await Self.gatedPhoto(fixture, at: "/held.jpg")
        let working = Task { try? await fixture.get(fixture.url("w:100", "/held.jpg")) }
        #expect(await waitUntil { fixture.proxy.load.working == 1 })
        let queued = (0..<3).map { index in
            Task { try await fixture.get(fixture.url("w:\(200 + index)", "/photo.jpg")) }
        }
        #expect(await waitUntil { fixture.proxy.load.waiting == 3 })
        // When: the server stops; the grace period runs out with the worker still busy.
        let stopping = Task { await fixture.server.stop() }
        // Then: every queued request is answered, not dropped.
        for request in queued {
            let (response, body) = try await request.value
            #expect(response.statusCode == 503)
            #expect(response.headers[.retryAfter] == "1")
            #expect(response.headers[.connection] == "close")
            #expect(Self.errorCode(body) == "shuttingDown")
        }
        await stopping.value
        gate.open()
        _ = await working.value
        // Health checks see the node leave.
        #expect(fixture.proxy.isDraining)
        #expect(await fixture.proxy.health().status == 503)
        await fixture.stop()
    }

    @Test("The processing timeout answers 504 timedOut")
    func processingTimeout() async throws {
        let fixture = try await ImageProxyServerTests.start { $0.limits.processingTimeout = .milliseconds(1) }
        defer { Task { await fixture.stop() } }
        // Made on a thread of its own: seconds of pixel work in a debug build would hold one of
        // the pool's two threads from every suite running beside this one.
        let large = try await onOwnThread {
            try JPEGCoder().encode(
                DecodedImage(bitmap: GeneratedImages.gradient(width: 3000, height: 2000), format: .jpeg),
                as: .jpeg,
                options: .init(quality: 0.9, maxEncodeDuration: nil)
            )
        }
        fixture.origin.setRoute("/large.jpg", .data(large, contentType: "image/jpeg"))
        let (response, body) = try await fixture.get(fixture.url("rs:fit:200:200", "/large.jpg"))
        #expect(response.statusCode == 504)
        #expect(Self.errorCode(body) == "timedOut")
        await fixture.stop()
    }

    @Test("A processing timeout stops the work: the 504 comes once it has ended, its slot and memory freed")
    func timeoutStopsTheWork() async throws {
        let budget = DecodingMemoryBudget(limit: 2_000_000_000)
        let fixture = try await ImageProxyServerTests.start {
            $0.limits.processingTimeout = .milliseconds(300)
            $0.memoryBudget = budget
            $0.workers = 1
        }
        defer { Task { await fixture.stop() } }
        let tiny = try PNGCoder().encode(
            DecodedImage(bitmap: GeneratedImages.gradient(width: 64, height: 64), format: .png),
            as: .png,
            options: .init()
        )
        fixture.origin.setRoute("/tiny.png", .data(tiny, contentType: "image/png"))
        // Given: a render of seconds in a debug build (a 16-megapixel enlargement, then its PNG
        // encode), kept modest: its canvases count in the parallel suite's memory checks.
        let started = ContinuousClock.now
        let (response, body) = try await fixture.get(fixture.url("rs:fill:4000:4000:1", "/tiny.png", suffix: "@png"))
        let elapsed = ContinuousClock.now - started
        // Then: 504, and by the time it is sent the work has ended: nothing holds the worker slot
        // or the memory it reserved.
        #expect(response.statusCode == 504)
        #expect(Self.errorCode(body) == "timedOut")
        #expect(fixture.proxy.load.working == 0)
        #expect(budget.bytesInUse == 0, "the render's reservation is held until its work ends")
        #expect(budget.peakBytesInUse >= 64_000_000, "the render reserved its canvases")
        #expect(elapsed < .seconds(60), "stopped, not run to its end: \(elapsed)")
        await fixture.stop()
    }

    @Test("/metrics: Prometheus text with requests by status, stage histograms, gauges, cache tiers and bytes")
    func metricsLines() async throws {
        let fixture = try await ImageProxyServerTests.start(metrics: true)
        defer { Task { await fixture.stop() } }
        let (ok, body) = try await fixture.get(fixture.url("w:100", "/photo.jpg"))
        #expect(ok.statusCode == 200)
        let (again, _) = try await fixture.get(fixture.url("w:50", "/photo.jpg"))
        #expect(again.statusCode == 200)
        let tampered = fixture.url("w:100", "/photo.jpg").replacingOccurrences(of: "/w:100/", with: "/w:101/")
        let (forbidden, _) = try await fixture.get(tampered)
        #expect(forbidden.statusCode == 403)
        let metricsURL = "http://127.0.0.1:\(try #require(fixture.server.metricsPort))/metrics"
        let (response, _) = try await fixture.get(metricsURL)
        #expect(response.headers[.contentType]?.hasPrefix("text/plain; version=0.0.4") == true)
        let text = try await Self.metrics(fixture)
        let (_, photo) = try await fixture.get(fixture.origin.url("/photo.jpg").absoluteString)
        let (_, smaller) = try await fixture.get(fixture.url("w:50", "/photo.jpg"))
        for line in [
            #"webimage_requests_total{status="200"} 2"#, #"webimage_requests_total{status="403"} 1"#,
            "webimage_queue_depth 0", "webimage_requests_in_flight 0", "webimage_source_fetches_total 1",
            #"webimage_cache_hits_total{tier="disk"} 1"#, "webimage_source_bytes_total \(2 * photo.count)",
            "webimage_result_bytes_total \(body.count + smaller.count)",
            #"webimage_stage_duration_seconds_count{stage="fetch"} 2"#,
            #"webimage_stage_duration_seconds_count{stage="decode"} 2"#,
            #"webimage_stage_duration_seconds_count{stage="transform"} 2"#,
            #"webimage_stage_duration_seconds_count{stage="queue"} 2"#,
            #"webimage_stage_duration_seconds_bucket{stage="encode",le="+Inf"} 2"#,
        ] {
            #expect(text.contains(line), "missing \(line) in:\n\(text)")
        }
        await fixture.stop()
    }

    static func metrics(_ fixture: Fixture) async throws -> String {
        let port = try #require(fixture.server.metricsPort)
        let (response, body) = try await fixture.get("http://127.0.0.1:\(port)/metrics")
        #expect(response.statusCode == 200)
        return String(decoding: body, as: UTF8.self)
    }
}
