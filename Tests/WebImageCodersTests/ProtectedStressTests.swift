import Dispatch
import Testing
@_spi(WebImageInternals) import WebImageCoders

/// `Protected` keeps its value and its mutex in one object. Run under ThreadSanitizer by
/// scripts/test.sh (`--filter Stress`), where an access the mutex does not order fails the run.
@Suite("Stress: Protected's one value behind one lock", .timeLimit(.minutes(2)))
struct ProtectedStressTests {
    /// Tells when it is freed.
    final class Tracked: Sendable {
        let freed: Protected<Bool>
        init(freed: Protected<Bool>) { self.freed = freed }
        deinit { freed.withLock { $0 = true } }
    }

    struct Refused: Error {}

    @Test("Increments from eight threads through two copies all count: the copies share one value and one lock")
    func copiesShareOneLock() {
        let counter = Protected(0)
        let copy = counter
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            let target = thread.isMultiple(of: 2) ? counter : copy
            for _ in 0..<20_000 { target.withLock { $0 += 1 } }
        }
        #expect(counter.withLock { $0 } == 160_000)
        #expect(copy.withLock { $0 } == 160_000)
    }

    @Test("A body that throws keeps its changes and leaves the lock free; the value goes with the last copy")
    func throwingBodyAndRelease() {
        let freed = Protected(false)
        do {
            let holder = Protected<Tracked?>(Tracked(freed: freed))
            let values = Protected([1, 2])
            #expect(throws: Refused.self) {
                try values.withLock { (list: inout [Int]) throws(Refused) in
                    list.append(3)
                    throw Refused()
                }
            }
            // Not re-entrant: a lock left held would deadlock here (and trip the time limit).
            #expect(values.withLock { $0 } == [1, 2, 3])
            #expect(holder.withLock { $0 != nil })
            #expect(!freed.withLock { $0 })
        }
        #expect(freed.withLock { $0 })
    }
}
