import Synchronization
@_spi(WebImageInternals) import WebImageCoders

/// Runs one piece of work per key however many callers ask for it at once: the first caller's
/// `work` starts a task, later callers with the same key wait for its value. A caller that is
/// cancelled stops waiting at once; when the last one has gone the work is cancelled too.
/// Once the work finishes the key is free again (results are not kept). Thread-safe; callers'
/// continuations are resumed outside the lock.
final class RequestCoalescer<Value: Sendable>: Sendable {
    private struct Entry {
        let generation: UInt64
        var task: Task<Void, Never>?
        var waiters: [UInt64: HandOffContinuation<Value, any Error>] = [:]
    }

    private struct State {
        var entries: [String: Entry] = [:]
        var nextID: UInt64 = 0
        /// Callers cancelled before their continuation was stored.
        var cancelledEarly: Set<UInt64> = []
    }

    private enum Role { case lead, join, cancelled }

    private let state = Mutex(State())

    /// The number of keys with work in flight.
    var inFlight: Int { state.withLock { $0.entries.count } }

    /// The callers waiting, across every key.
    var waiting: Int { state.withLock { $0.entries.values.reduce(0) { $0 + $1.waiters.count } } }

    /// The value of `work` for `key`, shared with every concurrent caller for the same key.
    /// - Returns: the value, and whether this caller joined work another caller started.
    /// - Throws: `CancellationError` when this caller's task is cancelled while it waits.
    func value(
        for key: String,
        work: @escaping @Sendable () async -> Value
    ) async throws -> (value: Value, joined: Bool) {
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        let joined = Mutex(false)
        defer { state.withLock { _ = $0.cancelledEarly.remove(id) } }
        let value = try await withTaskCancellationHandler {
            try await withThrowingHandOffContinuation { (continuation: HandOffContinuation<Value, any Error>) in
                let role = state.withLock { state -> Role in
                    if state.cancelledEarly.remove(id) != nil { return .cancelled }
                    if state.entries[key] != nil {
                        state.entries[key]?.waiters[id] = continuation
                        return .join
                    }
                    state.entries[key] = Entry(generation: id, waiters: [id: continuation])
                    return .lead
                }
                switch role {
                case .cancelled: continuation.resume(throwing: CancellationError())
                case .join: joined.withLock { $0 = true }
                case .lead: start(key: key, generation: id, work: work)
                }
            }
        } onCancel: {
            leave(key: key, id: id)
        }
        return (value, joined.withLock { $0 })
    }

    private func start(key: String, generation: UInt64, work: @escaping @Sendable () async -> Value) {
        let task = Task { [self] in
            let value = await work()
            finish(key: key, generation: generation, with: value)
        }
        let kept = state.withLock { state -> Bool in
            guard state.entries[key]?.generation == generation else { return false }
            state.entries[key]?.task = task
            return true
        }
        // Every caller left before the task was stored: nobody wants its value.
        if !kept { task.cancel() }
    }

    private func leave(key: String, id: UInt64) {
        let (continuation, orphaned) = state.withLock {
            state -> (HandOffContinuation<Value, any Error>?, Task<Void, Never>?) in
            guard var entry = state.entries[key], let continuation = entry.waiters.removeValue(forKey: id) else {
                // Not stored yet (its continuation will see this), or already answered.
                state.cancelledEarly.insert(id)
                return (nil, nil)
            }
            if entry.waiters.isEmpty {
                // Nobody waits any more: stop the work and free the key for the next caller.
                state.entries[key] = nil
                return (continuation, entry.task)
            }
            state.entries[key] = entry
            return (continuation, nil)
        }
        continuation?.resume(throwing: CancellationError())
        orphaned?.cancel()
    }

    private func finish(key: String, generation: UInt64, with value: Value) {
        let waiters = state.withLock { state -> [HandOffContinuation<Value, any Error>] in
            guard let entry = state.entries[key], entry.generation == generation else { return [] }
            state.entries[key] = nil
            return Array(entry.waiters.values)
        }
        for waiter in waiters { waiter.resume(returning: value) }
    }
}
