import Foundation
import Testing
import WebImageHTTP
import WebImageOrigin
import WebImageTestSupport

/// The read timeout is five seconds (the in-process origin answers well within it on a busy
/// machine) and the request timeout ten minutes, past the suite's time limit: only the read
/// timeout can end these loads in time.
@Suite("The session's read timeout", .timeLimit(.minutes(3)))
struct ReadTimeoutTests {
    private static var configuration: HTTPSession.Configuration {
        var configuration = HTTPSession.Configuration()
        configuration.readTimeout = .seconds(5)
        configuration.requestTimeout = .seconds(600)
        return configuration
    }

    /// 40,000 bytes in chunks of 4,000; each chunk after the first waits for `release`.
    private static func heldBody(_ release: OriginChunkRelease) -> OriginRoute {
        OriginRoute(body: Data(count: 40_000), behavior: .init(chunkSize: 4_000, chunkRelease: release))
    }

    @Test("A body that stops arriving ends with timedOut, naming the read timeout")
    func stalledBody() async throws {
        try await HTTPTestContext.with(configuration: Self.configuration) { context in
            let release = OriginChunkRelease()
            context.origin.setRoute("/stalls", Self.heldBody(release))
            let delegate = RecordingDelegate()
            do throws(HTTPSessionError) {
                _ = try await context.session.data(for: .init(url: context.origin.url("/stalls")), delegate: delegate)
                Issue.record("a stalled body loaded")
            } catch {
                #expect(error.code == .timedOut, "\(error.message)")
                #expect(error.message.contains("/stalls") && error.message.contains("read timeout"), "\(error.message)")
            }
            // It ended mid-body: the head and the first chunk had arrived.
            #expect(delegate.state.withLock { $0.responses.count } == 1)
            #expect(delegate.state.withLock { $0.chunks.reduce(0) { $0 + $1.count } } == 4_000)
            for _ in 0..<10 { release.release() }
        }
    }

    @Test("A server that never answers ends with timedOut on the read timeout, before the request timeout")
    func silentServer() async throws {
        try await HTTPTestContext.with(configuration: Self.configuration) { context in
            context.origin.setRoute("/silent", OriginRoute(behavior: .init(stall: true)))
            do throws(HTTPSessionError) {
                _ = try await context.session.data(for: .init(url: context.origin.url("/silent")))
                Issue.record("a silent server answered")
            } catch {
                #expect(error.code == .timedOut, "\(error.message)")
                #expect(error.message.contains("read timeout"), "\(error.message)")
            }
        }
    }

    @Test("A suspended task is not ended by the read timeout; resumed, it loads the whole body")
    func suspendedTask() async throws {
        try await HTTPTestContext.with(configuration: Self.configuration) { context in
            let release = OriginChunkRelease()
            context.origin.setRoute("/held", Self.heldBody(release))
            let outcome = Locked<(data: Data, error: HTTPSessionError?)?>(nil)
            let task = context.session.dataTask(with: .init(url: context.origin.url("/held"))) { data, _, error in
                outcome.withLock { $0 = (data, error) }
            }
            task.resume()
            #expect(await waitUntil { task.countOfBytesReceived == 4_000 })
            task.suspend()
            // Three read timeouts with nothing arriving: the watchdog sees the task idle at
            // least twice.
            try await Task.sleep(for: .seconds(15))
            #expect(task.state == .suspended)
            #expect(outcome.withLock { $0 } == nil, "the suspended task ended")
            for _ in 0..<10 { release.release() }
            task.resume()
            #expect(await waitUntil { outcome.withLock { $0 } != nil })
            let (data, error) = try #require(outcome.withLock { $0 })
            if let error { Issue.record("the resumed task failed: \(error.message)") }
            #expect(data.count == 40_000)
        }
    }
}
