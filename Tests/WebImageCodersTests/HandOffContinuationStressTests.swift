import Foundation
import Synchronization
import Testing
@_spi(WebImageInternals) import WebImageCoders

/// Run under `swift test --sanitize=thread --filter Stress` by scripts/test.sh, where a hand-over
/// ThreadSanitizer cannot see fails the run. With `withCheckedContinuation` in place of
/// `withHandOffContinuation`, the resume-first rounds below report a data race on `Box.value`.
@Suite("Stress: values handed over through continuations", .timeLimit(.minutes(2)))
struct HandOffContinuationStressTests {
    /// Made on the resuming thread and read on the waiting one: ThreadSanitizer checks the
    /// initializer's store against the waiter's load (the shape of the image in CI's report, whose
    /// storage is immutable too).
    final class Box: Sendable {
        let value: Int
        init(_ value: Int) { self.value = value }
    }

    /// Set with relaxed ordering, so waiting on it orders nothing for ThreadSanitizer.
    final class Signal: Sendable {
        let isSet = Atomic<Bool>(false)
        func set() { isSet.store(true, ordering: .relaxed) }
        func wait() { while !isSet.load(ordering: .relaxed) { sched_yield() } }
    }

    /// Resumes `continuation` with a box holding `round` from a new thread; when `resumeFirst`,
    /// returns only after the resume, so the task's `await` finds it done.
    static func handOver<Failure>(
        round: Int,
        resumeFirst: Bool,
        to continuation: HandOffContinuation<Box, Failure>
    ) {
        let resumed = Signal()
        Thread {
            continuation.resume(returning: Box(round))
            resumed.set()
        }.start()
        if resumeFirst { resumed.wait() }
    }

    @Test("Values resumed before or after the task awaits arrive whole", arguments: [true, false])
    func handsOver(resumeFirst: Bool) async {
        for round in 0..<200 {
            let box = await withHandOffContinuation { (continuation: HandOffContinuation<Box, Never>) in
                Self.handOver(round: round, resumeFirst: resumeFirst, to: continuation)
            }
            #expect(box.value == round)
        }
    }

    @Test("A throwing hand-over delivers values and errors", arguments: [true, false])
    func throwingHandsOver(resumeFirst: Bool) async throws {
        for round in 0..<200 {
            let box = try await withThrowingHandOffContinuation { (continuation: HandOffContinuation<Box, any Error>) in
                Self.handOver(round: round, resumeFirst: resumeFirst, to: continuation)
            }
            #expect(box.value == round)
        }
        struct Refused: Error {}
        await #expect(throws: Refused.self) {
            _ = try await withThrowingHandOffContinuation { (continuation: HandOffContinuation<Int, any Error>) in
                Thread { continuation.resume(throwing: Refused()) }.start()
            }
        }
    }
}
