@_spi(WebImageInternals) import WebImageCoders

/// Hands out input positions to a fixed set of workers and passes their results on in input
/// order, however the loads finish: the worker whose result is the next one due emits it, with
/// every later one already in. A worker that finishes while another emits leaves its result to
/// that one, so results are emitted by one worker at a time and never out of order.
///
/// A few long-lived workers pulling positions cost one Swift task each for the whole run, where
/// a task group with a task per input resumes its parent and starts a task for every input.
/// Thread-safe; `emit` runs outside the queue's lock.
final class InputOrderQueue<Result: Sendable>: Sendable {
    private struct State {
        var nextToClaim = 0
        var nextToEmit = 0
        var ready: [Int: Result] = [:]
        var emitting = false

        mutating func takeDue() -> [Result] {
            var due: [Result] = []
            while let result = ready.removeValue(forKey: nextToEmit) {
                due.append(result)
                nextToEmit += 1
            }
            return due
        }
    }

    /// How many positions there are (0 ..< count).
    let count: Int
    private let state = Protected(State())

    init(count: Int) { self.count = max(0, count) }

    /// The next position no worker has taken; `nil` once all are taken.
    func claim() -> Int? {
        state.withLock { state in
            guard state.nextToClaim < count else { return nil }
            defer { state.nextToClaim += 1 }
            return state.nextToClaim
        }
    }

    /// Records the result of position `index` (from ``claim()``, once). When no other worker is
    /// emitting, this one calls `emit` with every result now due, in order, until the next one
    /// due is not in yet.
    func finish(_ index: Int, with result: Result, emit: ([Result]) -> Void) {
        var due = state.withLock { state -> [Result] in
            state.ready[index] = result
            guard !state.emitting else { return [] }
            let due = state.takeDue()
            state.emitting = !due.isEmpty
            return due
        }
        while !due.isEmpty {
            emit(due)
            due = state.withLock { state in
                let due = state.takeDue()
                state.emitting = !due.isEmpty
                return due
            }
        }
    }
}
