import Foundation
import Testing
import WebImageTestSupport

@testable import WebImageServer

/// The proxy's admission gate and request coalescing, on their own.
@Suite("webimage serve: workers, queue and shared work", .timeLimit(.minutes(3)))
struct LoadControlTests {
    /// A door the test opens to let a body finish.
    final class Door: Sendable {
        private let stream: AsyncStream<Void>
        private let continuation: AsyncStream<Void>.Continuation

        init() { (stream, continuation) = AsyncStream.makeStream() }
        func open() { continuation.finish() }
        func pass() async { for await _ in stream {} }
    }

    @Test("Workers run at once, the queue waits in order, past it queueFull at once; a cancelled waiter leaves")
    func gate() async throws {
        let loads = Locked<[AdmissionGate.Load]>([])
        let gate = AdmissionGate(workers: 1, queueLimit: 2) { load in loads.withLock { $0.append(load) } }
        let door = Door()
        let order = Locked<[String]>([])
        let first = Task {
            try await gate.run {
                await door.pass()
                order.withLock { $0.append("first") }
            }
        }
        #expect(await waitUntil { gate.load == .init(working: 1, waiting: 0) })
        let second = Task { try await gate.run { order.withLock { $0.append("second") } } }
        #expect(await waitUntil { gate.load.waiting == 1 })
        let third = Task { try await gate.run { order.withLock { $0.append("third") } } }
        #expect(await waitUntil { gate.load.waiting == 2 })
        // Full: refused at once, nothing queued.
        await #expect(throws: AdmissionGate.Refusal.queueFull) {
            try await gate.run { order.withLock { $0.append("x") } }
        }
        // The second gives up waiting: it leaves the queue and never runs.
        second.cancel()
        await #expect(throws: AdmissionGate.Refusal.cancelled) { try await second.value }
        #expect(gate.load == .init(working: 1, waiting: 1))
        door.open()
        try await first.value
        try await third.value
        #expect(order.value == ["first", "third"])
        #expect(gate.load == .init(working: 0, waiting: 0))
        #expect(loads.value.last == .init(working: 0, waiting: 0))
        #expect(loads.value.contains(.init(working: 1, waiting: 2)))
    }

    @Test("A gate with no queue admits up to its workers and refuses the rest")
    func noQueue() async throws {
        let gate = AdmissionGate(workers: 2, queueLimit: 0)
        let door = Door()
        let running = (0..<2).map { _ in Task { try await gate.run { await door.pass() } } }
        #expect(await waitUntil { gate.load.working == 2 })
        await #expect(throws: AdmissionGate.Refusal.queueFull) { try await gate.run {} }
        door.open()
        for task in running { try await task.value }
        try await gate.run {}
        #expect(gate.load == .init(working: 0, waiting: 0))
    }

    @Test("Identical concurrent requests share one run; each caller may leave; the last one out stops it")
    func coalescing() async throws {
        let coalescer = RequestCoalescer<Int>()
        let runs = Locked(0)
        let door = Door()
        let callers = (0..<5).map { _ in
            Task {
                try await coalescer.value(for: "a") {
                    runs.withLock { $0 += 1 }
                    await door.pass()
                    return 42
                }
            }
        }
        #expect(await waitUntil { coalescer.waiting == 5 })
        // One caller leaving does not stop the others' work.
        callers[0].cancel()
        await #expect(throws: CancellationError.self) { try await callers[0].value }
        door.open()
        var joined = 0
        for caller in callers.dropFirst() {
            let (value, didJoin) = try await caller.value
            #expect(value == 42)
            if didJoin { joined += 1 }
        }
        #expect(runs.value == 1)
        // The leader started the work; every other caller joined it (the cancelled one aside).
        #expect(joined >= 3)
        #expect(coalescer.inFlight == 0)

        // Every caller leaves: the work is cancelled, and the key is free for new work.
        let stopped = Locked(false)
        let waiting = Task {
            try await coalescer.value(for: "b") { () async -> Int in
                while !Task.isCancelled { try? await Task.sleep(for: .milliseconds(5)) }
                stopped.withLock { $0 = true }
                return 0
            }
        }
        #expect(await waitUntil { coalescer.waiting == 1 })
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
        #expect(await waitUntil { stopped.value })
        #expect(coalescer.inFlight == 0)
        let again = try await coalescer.value(for: "b") { 7 }
        #expect(again.value == 7 && !again.joined)
    }
}
