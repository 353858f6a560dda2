import Foundation
import Synchronization
import Testing
import WebImageOrigin

@testable import WebImageHTTP

@Suite("Task priority and the per-host limit", .timeLimit(.minutes(1)))
struct TaskPriorityTests {
    /// Resumes a data task for `path` and returns it with a stream that ends at its completion.
    private static func start(
        _ context: HTTPTestContext,
        _ path: String,
        priority: Float? = nil
    ) -> (HTTPSessionTask, AsyncStream<HTTPTaskEvent>) {
        let task = context.session.dataTask(with: .init(url: context.origin.url(path)))
        if let priority { task.priority = priority }
        let events = task.events
        task.resume()
        return (task, events)
    }

    /// "ok", the failure's code, or "no completion".
    private static func completion(_ events: AsyncStream<HTTPTaskEvent>) async -> String {
        for await event in events {
            if case .completed(let error) = event { return error.map { "\($0.code)" } ?? "ok" }
        }
        return "no completion"
    }

    private static func waitUntil(_ condition: () -> Bool) async throws {
        while !condition() { try await Task.sleep(for: .milliseconds(5)) }
    }

    @Test(
        "Tasks waiting for a host start highest priority first, equal ones in order; a new priority reorders a waiting task"
    )
    func order() async throws {
        var configuration = HTTPSession.Configuration.default
        configuration.maximumConnectionsPerHost = 1
        try await HTTPTestContext.with(configuration: configuration) { context in
            let gate = OriginGate()
            context.origin.setRoute("/held", OriginRoute(body: Data("h".utf8), behavior: .init(gate: gate)))
            for name in ["b", "c", "d", "e"] {
                context.origin.setRoute("/\(name)", .data(Data(name.utf8), contentType: "text/plain"))
            }
            let held = Self.start(context, "/held")
            try await Self.waitUntil { context.origin.requestCount(for: "/held") == 1 }
            let host = HostAdmission.key(for: context.origin.url("/held"))
            let waiting = [
                Self.start(context, "/b", priority: HTTPSessionTask.lowPriority),
                Self.start(context, "/c"),
                Self.start(context, "/d", priority: HTTPSessionTask.highPriority),
                Self.start(context, "/e", priority: HTTPSessionTask.highPriority),
            ]
            try await Self.waitUntil { context.session.admission.waitingCount(host) == 4 }
            #expect(context.origin.totalRequestCount == 1)
            waiting[0].0.priority = 7  // clamped to 1: now first
            #expect(waiting[0].0.priority == 1)
            gate.open()
            for (_, events) in [held] + waiting {
                #expect(await Self.completion(events) == "ok")
            }
            #expect(context.origin.requests.map(\.path) == ["/held", "/b", "/d", "/e", "/c"])
            #expect(context.origin.maxConcurrentRequests == 1)
            #expect(context.session.admission.waitingCount(host) == 0)
        }
    }

    @Test("Waiters of equal priority go in start order, not in the order their Swift tasks reach the gate")
    func startOrderBeatsArrival() async throws {
        let admission = HostAdmission(limit: 1)
        let admitted = AdmissionLog()
        #expect(await admission.enter("h", taskIdentifier: 1, startOrder: 1, priority: { 0.5 }))
        let startedLater = admitted.wait(admission, identifier: 3, startOrder: 3)
        try await Self.waitUntil { admission.waitingCount("h") == 1 }
        let startedEarlier = admitted.wait(admission, identifier: 2, startOrder: 2)
        try await Self.waitUntil { admission.waitingCount("h") == 2 }
        admission.leave("h")
        await startedLater.value
        await startedEarlier.value
        #expect(admitted.identifiers.withLock { $0 } == [2, 3])
        #expect(admission.waitingCount("h") == 0)
    }

    @Test(
        "A task cancelled while it waits completes cancelled without a request; the rest run, never more than the limit at once"
    )
    func cancelWhileWaiting() async throws {
        var configuration = HTTPSession.Configuration.default
        configuration.maximumConnectionsPerHost = 2
        try await HTTPTestContext.with(configuration: configuration) { context in
            let gate = OriginGate()
            context.origin.setRoute("/held", OriginRoute(body: Data("h".utf8), behavior: .init(gate: gate)))
            context.origin.setRoute(
                "/slow",
                OriginRoute(body: Data("s".utf8), behavior: .init(delay: .milliseconds(20)))
            )
            context.origin.setRoute("/never", .data(Data("n".utf8), contentType: "text/plain"))
            let held = [Self.start(context, "/held"), Self.start(context, "/held")]
            try await Self.waitUntil { context.origin.requestCount(for: "/held") == 2 }
            let host = HostAdmission.key(for: context.origin.url("/held"))
            let cancelled = Self.start(context, "/never", priority: 1)
            let others = (0..<6).map { _ in Self.start(context, "/slow") }
            try await Self.waitUntil { context.session.admission.waitingCount(host) == 7 }
            cancelled.0.cancel()
            #expect(await Self.completion(cancelled.1) == "cancelled")
            #expect(context.session.admission.waitingCount(host) == 6)
            // Swift-task cancellation of data(for:) while it waits.
            let waitingCall = Task { try await context.session.data(for: .init(url: context.origin.url("/never"))) }
            try await Self.waitUntil { context.session.admission.waitingCount(host) == 7 }
            waitingCall.cancel()
            await #expect {
                try await waitingCall.value
            } throws: { error in
                (error as? HTTPSessionError)?.code == .cancelled
            }
            gate.open()
            for (_, events) in held + others { #expect(await Self.completion(events) == "ok") }
            #expect(context.origin.requestCount(for: "/never") == 0)
            #expect(context.origin.requestCount(for: "/slow") == 6)
            #expect(context.origin.maxConcurrentRequests == 2)
            #expect(context.session.admission.waitingCount(host) == 0)
        }
    }
}

/// The tasks a ``HostAdmission`` let through, in order.
private final class AdmissionLog: Sendable {
    let identifiers = Mutex<[Int]>([])

    /// A Swift task that waits at `admission`'s host "h", logs its admission and leaves.
    func wait(_ admission: HostAdmission, identifier: Int, startOrder: UInt64) -> Task<Void, Never> {
        Task {
            guard await admission.enter("h", taskIdentifier: identifier, startOrder: startOrder, priority: { 0.5 })
            else { return }
            identifiers.withLock { $0.append(identifier) }
            admission.leave("h")
        }
    }
}
