import DequeModule
import Synchronization
@_spi(WebImageInternals) import WebImageCoders

/// Lets at most `workers` requests work at once and `queueLimit` more wait, first come first
/// served; past that a request is turned away at once (the proxy answers 503). A waiting
/// request that is cancelled (its client went away) leaves the queue. Thread-safe; nothing is
/// called under its lock.
public final class AdmissionGate: Sendable {
    /// Why a request was not admitted.
    public enum Refusal: Error, Sendable, Equatable {
        /// `workers` are busy and `queueLimit` requests already wait.
        case queueFull
        /// The task was cancelled while it waited.
        case cancelled
        /// The server is shutting down: ``drain()`` turned away the waiting and later requests.
        case draining
    }

    /// A snapshot of the gate.
    public struct Load: Sendable, Equatable {
        /// Requests holding a worker slot.
        public var working: Int
        /// Requests waiting for one.
        public var waiting: Int
    }

    public let workers: Int
    public let queueLimit: Int
    private let onLoadChange: @Sendable (Load) -> Void

    private struct Waiter {
        let id: UInt64
        let continuation: HandOffContinuation<Void, any Error>
    }

    private struct State {
        var working = 0
        var waiters: Deque<Waiter> = []
        var nextID: UInt64 = 0
        /// Waiters between the decision to wait and their continuation joining `waiters`; `true`
        /// when cancelled in that window.
        var unqueued: [UInt64: Bool] = [:]
        var draining = false
    }

    private let state = Mutex(State())

    /// - Parameters:
    ///   - workers: requests working at once, at least 1.
    ///   - queueLimit: requests waiting beyond those, at least 0.
    ///   - onLoadChange: told the load after each change (outside the gate's lock; it must not
    ///     block). For gauges.
    public init(workers: Int, queueLimit: Int, onLoadChange: @escaping @Sendable (Load) -> Void = { _ in }) {
        self.workers = max(1, workers)
        self.queueLimit = max(0, queueLimit)
        self.onLoadChange = onLoadChange
    }

    public var load: Load {
        state.withLock { Load(working: $0.working, waiting: $0.waiters.count) }
    }

    /// Whether ``drain()`` was called.
    public var isDraining: Bool { state.withLock { $0.draining } }

    /// Runs `body` holding a worker slot, after waiting for one if all are busy.
    /// - Throws: ``Refusal/queueFull`` at once when the queue is full, ``Refusal/cancelled``
    ///   when the task is cancelled while waiting (`body` does not run then).
    public func run<Value>(_ body: () async -> Value) async throws(Refusal) -> Value {
        try await enter()
        let value = await body()
        leave()
        return value
    }

    private func enter() async throws(Refusal) {
        enum Decision {
            case admitted, refused, draining
            case wait(UInt64)
        }
        let decision = state.withLock { state -> Decision in
            if state.draining { return .draining }
            if state.working < workers, state.waiters.isEmpty {
                state.working += 1
                return .admitted
            }
            guard state.waiters.count < queueLimit else { return .refused }
            state.nextID += 1
            state.unqueued[state.nextID] = false
            return .wait(state.nextID)
        }
        switch decision {
        case .admitted:
            onLoadChange(load)
            return
        case .refused: throw .queueFull
        case .draining: throw .draining
        case .wait(let id):
            do {
                try await withTaskCancellationHandler {
                    try await withThrowingHandOffContinuation { (continuation: HandOffContinuation<Void, any Error>) in
                        let refusal = state.withLock { state -> Refusal? in
                            if state.unqueued.removeValue(forKey: id) == true { return .cancelled }
                            if state.draining { return .draining }
                            state.waiters.append(Waiter(id: id, continuation: continuation))
                            return nil
                        }
                        if let refusal { continuation.resume(throwing: refusal) }
                        onLoadChange(load)
                    }
                } onCancel: {
                    let waiter = state.withLock { state -> Waiter? in
                        if let index = state.waiters.firstIndex(where: { $0.id == id }) {
                            return state.waiters.remove(at: index)
                        }
                        // Not queued yet: its continuation will see this. Otherwise it was
                        // admitted already and holds the slot.
                        if state.unqueued[id] != nil { state.unqueued[id] = true }
                        return nil
                    }
                    waiter?.continuation.resume(throwing: Refusal.cancelled)
                }
            } catch {
                onLoadChange(load)
                throw (error as? Refusal) ?? .cancelled
            }
        }
    }

    /// Turns away every waiting request and every later one with ``Refusal/draining`` (the
    /// server is stopping and answers them 503); working requests keep their slots.
    public func drain() {
        let turnedAway = state.withLock { state -> [Waiter] in
            state.draining = true
            defer { state.waiters.removeAll() }
            return Array(state.waiters)
        }
        for waiter in turnedAway { waiter.continuation.resume(throwing: Refusal.draining) }
        onLoadChange(load)
    }

    /// Hands the slot to the longest waiter, or frees it.
    private func leave() {
        let next = state.withLock { state -> Waiter? in
            if let waiter = state.waiters.popFirst() { return waiter }
            state.working -= 1
            return nil
        }
        next?.continuation.resume()
        onLoadChange(load)
    }
}
