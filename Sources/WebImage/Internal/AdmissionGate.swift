@_spi(WebImageInternals) import WebImageCoders

/// Lets at most `limit` pieces of work in at once; the others wait, the highest priority first
/// and in arrival order within a priority. Each piece that got in calls ``leave()`` once when it
/// is done. Thread-safe; waiting work is started on the thread whose ``leave()`` made room,
/// outside the gate's lock.
final class AdmissionGate: Sendable {
    /// The most pieces of work in at once (at least 1).
    let limit: Int
    private let state = Protected(State())

    private struct State {
        var inside = 0
        /// Waiting work by priority, each in arrival order.
        var waiting: [ImageWorkQueue.Priority: [@Sendable () -> Void]] = [:]

        mutating func takeNext() -> (@Sendable () -> Void)? {
            for priority in ImageWorkQueue.Priority.allCases.reversed() {
                if let first = waiting[priority]?.first {
                    waiting[priority]?.removeFirst()
                    return first
                }
            }
            return nil
        }
    }

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// Pieces of work in now.
    var insideCount: Int { state.withLock { $0.inside } }

    /// Runs `enter` now, on the calling thread, when there is room; otherwise when a piece
    /// leaves and no work of a higher priority, or of the same priority but older, waits.
    /// `enter` should hand its work on (enqueue it), not run it: it may run inside ``leave()``.
    func enter(priority: ImageWorkQueue.Priority, _ enter: @escaping @Sendable () -> Void) {
        let now = state.withLock { state -> Bool in
            guard state.inside < limit else {
                state.waiting[priority, default: []].append(enter)
                return false
            }
            state.inside += 1
            return true
        }
        if now { enter() }
    }

    /// A piece of work is done: the next waiting one, if any, comes in on this thread.
    func leave() {
        let next = state.withLock { state -> (@Sendable () -> Void)? in
            if let next = state.takeNext() { return next }  // the place passes on
            state.inside -= 1
            return nil
        }
        next?()
    }
}
