import Foundation
import Testing
import WebImageHTTP
import WebImageOrigin
import WebImageTestSupport

@Suite("HTTPSessionTask lifecycle", .timeLimit(.minutes(1)))
struct HTTPSessionTaskTests {
    @Test("Tasks start suspended, get unique identifiers, and complete once")
    func lifecycle() async throws {
        let context = try await HTTPTestContext.make()
        context.origin.setRoute("/x", .data(Data("x".utf8), contentType: "text/plain"))
        let completions = Locked(0)
        let first = context.session.dataTask(with: .init(url: context.origin.url("/x"))) { _, _, _ in
            completions.withLock { $0 += 1 }
        }
        let second = context.session.dataTask(with: .init(url: context.origin.url("/x")))
        #expect(first.taskIdentifier != second.taskIdentifier)
        #expect(first.state == .suspended)
        #expect(context.origin.requestCount(for: "/x") == 0)
        let events = first.events
        first.resume()
        var sawCompletion = false
        for await event in events { if case .completed(nil) = event { sawCompletion = true } }
        #expect(sawCompletion)
        #expect(first.state == .completed && completions.withLock { $0 } == 1)
        first.cancel()  // no second completion
        #expect(completions.withLock { $0 } == 1)
        await context.finish()
    }

    @Test("Cancelling a task that never started completes it with cancelled at once")
    func cancelBeforeStart() async throws {
        let context = try await HTTPTestContext.make()
        let error = Locked<HTTPSessionError?>(nil)
        let task = context.session.dataTask(with: .init(url: context.origin.url("/never"))) { _, _, failure in
            error.withLock { $0 = failure }
        }
        task.cancel()
        #expect(error.withLock { $0?.code } == .cancelled)
        #expect(context.origin.requests.isEmpty)
        await context.finish()
    }

    @Test("Cancelling a running task and cancelling the Swift task both give cancelled")
    func cancelRunning() async throws {
        let context = try await HTTPTestContext.make()
        let gate = OriginGate()
        context.origin.setRoute("/held", OriginRoute(body: Data("late".utf8), behavior: .init(gate: gate)))
        let task = context.session.dataTask(with: .init(url: context.origin.url("/held")))
        let events = task.events
        task.resume()
        while context.origin.requestCount(for: "/held") == 0 { try await Task.sleep(for: .milliseconds(5)) }
        task.cancel()
        var completion: HTTPSessionError?
        for await event in events { if case .completed(let error) = event { completion = error } }
        #expect(completion?.code == .cancelled)

        let swiftTask = Task { try await context.session.data(for: .init(url: context.origin.url("/held"))) }
        while context.origin.requestCount(for: "/held") < 2 { try await Task.sleep(for: .milliseconds(5)) }
        swiftTask.cancel()
        do {
            _ = try await swiftTask.value
            Issue.record("the cancelled Swift task succeeded")
        } catch let error as HTTPSessionError {
            #expect(error.code == .cancelled)
        }
        gate.open()
        await context.finish()
    }

    @Test("Delegate: response, chunks in order, a cancel disposition, and completion")
    func delegateEvents() async throws {
        let context = try await HTTPTestContext.make()
        let payload = Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0 * 7) })
        context.origin.setRoute("/big", OriginRoute(body: payload, behavior: .init(chunkSize: 16_384)))
        let delegate = RecordingDelegate()
        let (data, _) = try await context.session.data(for: .init(url: context.origin.url("/big")), delegate: delegate)
        #expect(data == payload)
        let state = delegate.state.withLock { $0 }
        #expect(state.responses.count == 1 && state.responses[0].expectedContentLength == 200_000)
        #expect(state.chunks.count > 1)
        #expect(state.chunks.reduce(Data(), +) == payload)
        #expect(state.completed.count == 1 && state.completed[0] == nil)

        let refusing = RecordingDelegate(disposition: .cancel)
        do {
            _ = try await context.session.data(for: .init(url: context.origin.url("/big")), delegate: refusing)
            Issue.record("a refused response completed")
        } catch {
            #expect(error.code == .cancelled)
            #expect(refusing.state.withLock { $0.chunks.isEmpty })
        }
        await context.finish()
    }

    @Test("Download and upload progress follow Content-Length")
    func progress() async throws {
        let context = try await HTTPTestContext.make()
        let payload = Data(count: 300_000)
        context.origin.setRoute("/file", OriginRoute(body: payload, behavior: .init(chunkSize: 50_000)))
        let task = context.session.dataTask(with: .init(url: context.origin.url("/file")))
        let events = task.events
        task.resume()
        for await _ in events {}
        #expect(task.progress.totalUnitCount == 300_000 && task.progress.completedUnitCount == 300_000)
        #expect(task.countOfBytesReceived == 300_000 && task.countOfBytesExpectedToReceive == 300_000)

        let upload = context.session.dataTask(
            with: .init(url: context.origin.url("/echo"), method: .post, body: .data(Data(count: 1_000_000)))
        )
        let uploadEvents = upload.events
        upload.resume()
        var reports: [Int64] = []
        for await event in uploadEvents { if case .uploadProgress(let sent, _) = event { reports.append(sent) } }
        #expect(reports.count > 1 && reports.last == 1_000_000)
        #expect(
            upload.uploadProgress.completedUnitCount == 1_000_000 && upload.uploadProgress.totalUnitCount == 1_000_000
        )
        #expect(context.origin.requests.last?.body.count == 1_000_000)
        await context.finish()
    }

    /// A 40,000-byte body in 4,000-byte chunks, each after the first sent only when `release`
    /// lets it go: what the task receives is the test's to decide, however busy the machine.
    static func releasedBody(_ context: HTTPTestContext, _ release: OriginChunkRelease) -> HTTPSessionTask {
        context.origin.setRoute(
            "/slow",
            OriginRoute(body: Data(count: 40_000), behavior: .init(chunkSize: 4_000, chunkRelease: release))
        )
        return context.session.dataTask(with: .init(url: context.origin.url("/slow")))
    }

    static func waitUntil(_ task: HTTPSessionTask, received bytes: Int64) async throws {
        while task.countOfBytesReceived < bytes { try await Task.sleep(for: .milliseconds(5)) }
    }

    @Test("A suspended task holds back until resumed")
    func suspendResume() async throws {
        let context = try await HTTPTestContext.make()
        let release = OriginChunkRelease()
        let task = Self.releasedBody(context, release)
        let events = task.events
        task.resume()
        try await Self.waitUntil(task, received: 4_000)
        task.suspend()
        #expect(task.state == .suspended)
        // The chunk that arrives first after suspending is counted before the task holds back.
        release.release()
        try await Self.waitUntil(task, received: 8_000)
        for _ in 0..<8 { release.release() }
        try await Task.sleep(for: .milliseconds(300))
        #expect(task.countOfBytesReceived == 8_000, "no body is read while suspended")
        #expect(task.state == .suspended)
        task.resume()
        for await _ in events {}
        #expect(task.countOfBytesReceived == 40_000 && task.error == nil)
        await context.finish()
    }

    @Test("Cancelling a suspended task ends it at once with cancelled")
    func cancelWhileSuspended() async throws {
        let context = try await HTTPTestContext.make()
        let task = Self.releasedBody(context, OriginChunkRelease())
        let events = task.events
        task.resume()
        try await Self.waitUntil(task, received: 4_000)
        task.suspend()
        try await Task.sleep(for: .milliseconds(100))
        task.cancel()
        var completion: HTTPSessionError?
        for await event in events { if case .completed(let error) = event { completion = error } }
        #expect(completion?.code == .cancelled)
        #expect(task.countOfBytesReceived == 4_000)
        await context.finish()
    }

    @Test("Closure style: success with the value, failure with the error")
    func closureStyle() async throws {
        let context = try await HTTPTestContext.make()
        context.origin.setRoute("/ok", .data(Data("fine".utf8), contentType: "text/plain"))
        let outcome = Locked<[String]>([])
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            context.session.get(
                context.origin.url("/ok").absoluteString,
                serializer: .string,
                success: { _, text in
                    outcome.withLock { $0.append(text) }
                    context.session.get(
                        context.origin.url("/missing").absoluteString,
                        serializer: .string,
                        success: { _, _ in
                            continuation.resume()
                        },
                        failure: { task, error in
                            outcome.withLock { $0.append("\(error.code):\(error.statusCode ?? 0):\(task != nil)") }
                            continuation.resume()
                        }
                    )
                },
                failure: { _, _ in continuation.resume() }
            )
        }
        #expect(outcome.withLock { $0 } == ["fine", "unacceptableStatusCode:404:true"])
        let failed = Locked<HTTPSessionError.Code?>(nil)
        let task = context.session.get(
            "not a url",
            serializer: .data,
            success: { _, _ in },
            failure: { _, error in failed.withLock { $0 = error.code } }
        )
        #expect(task == nil && failed.withLock { $0 } == .invalidURL)
        await context.finish()
    }
}

/// Cancels its task when the first body chunk arrives.
final class CancelOnFirstChunk: HTTPSessionTaskDelegate {
    func task(_ task: HTTPSessionTask, didReceive data: Data) { task.cancel() }
}

/// Cancels the task from another Swift task once the first chunk is in: while the load waits for
/// the next one.
final class CancelAfterFirstChunk: HTTPSessionTaskDelegate {
    func task(_ task: HTTPSessionTask, didReceive data: Data) {
        Task {
            try? await Task.sleep(for: .milliseconds(100))
            task.cancel()
        }
    }
}

@Suite("Cancellation from a delegate", .timeLimit(.minutes(1)))
struct DelegateCancellationTests {
    @Test("A delegate cancelling mid-body stops an async load with cancelled")
    func cancelFromDelegate() async throws {
        let context = try await HTTPTestContext.make()
        context.origin.setRoute(
            "/long",
            OriginRoute(
                body: Data(count: 1_000_000),
                behavior: .init(chunkSize: 10_000, chunkInterval: .milliseconds(5))
            )
        )
        await Self.expectCancelled(context, "/long", delegate: CancelOnFirstChunk())
        await context.finish()
    }

    /// Loads `path` with `delegate` (which cancels the task) and expects the load to end
    /// `cancelled`.
    static func expectCancelled(_ context: HTTPTestContext, _ path: String, delegate: any HTTPSessionTaskDelegate) async
    {
        do {
            _ = try await context.session.data(for: .init(url: context.origin.url(path)), delegate: delegate)
            Issue.record("the load finished despite the cancel")
        } catch {
            #expect(error.code == .cancelled, "\(error.message)")
        }
    }

    /// The body stops after its first chunk (the rest is never released) and the timeouts are
    /// longer than the suite's time limit: only the cancel can end the load, and it must.
    @Test("A delegate cancelling an async load whose body has stalled ends it with cancelled")
    func cancelStalledBody() async throws {
        var configuration = HTTPSession.Configuration()
        configuration.readTimeout = .seconds(600)
        configuration.requestTimeout = .seconds(600)
        let context = try await HTTPTestContext.make(configuration: configuration)
        let release = OriginChunkRelease()
        context.origin.setRoute(
            "/stalls",
            OriginRoute(body: Data(count: 40_000), behavior: .init(chunkSize: 4_000, chunkRelease: release))
        )
        await Self.expectCancelled(context, "/stalls", delegate: CancelAfterFirstChunk())
        // The caller's own Swift task is not cancelled by the HTTP task's cancel.
        #expect(!Task.isCancelled)
        // Lets the origin's handler finish, so the server stops at once.
        for _ in 0..<10 { release.release() }
        await context.finish()
    }
}
