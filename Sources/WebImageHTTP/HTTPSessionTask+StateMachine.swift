/// The lifecycle of an ``HTTPSessionTask`` as a pure state machine: events return the action
/// to run outside the lock (AsyncHTTPClient's `Transaction+StateMachine` style).
struct HTTPSessionTaskStateMachine {
    enum State: Equatable {
        /// Created, not yet resumed.
        case initialized
        /// Started; `paused` while suspended after starting (the body is not read meanwhile).
        case running(paused: Bool)
        /// `cancel()` was called; waiting for the work to wind down.
        case canceling
        /// The completion has been delivered.
        case completed
    }

    enum ResumeAction: Equatable {
        case start
        case unpause
        case none
    }

    enum CancelAction: Equatable {
        /// Never started: complete with `cancelled` at once.
        case completeCancelled
        /// Running: stop the work; it will complete with `cancelled`.
        case stopWork
        case none
    }

    private(set) var state: State = .initialized
    /// Suspended before ever starting (so `resume()` must start it).
    private(set) var suspendedBeforeStart = true

    mutating func resume() -> ResumeAction {
        switch state {
        case .initialized:
            state = .running(paused: false)
            return .start
        case .running(paused: true):
            state = .running(paused: false)
            return .unpause
        case .running(paused: false), .canceling, .completed:
            return .none
        }
    }

    /// Returns whether the task is now paused.
    mutating func suspend() -> Bool {
        if case .running = state {
            state = .running(paused: true)
            return true
        }
        return false
    }

    mutating func cancel() -> CancelAction {
        switch state {
        case .initialized:
            state = .completed
            return .completeCancelled
        case .running:
            state = .canceling
            return .stopWork
        case .canceling, .completed:
            return .none
        }
    }

    /// Returns `true` exactly once: the caller delivers the completion.
    mutating func complete() -> Bool {
        guard state != .completed else { return false }
        state = .completed
        return true
    }

    var isPaused: Bool { state == .running(paused: true) }
    var isCanceling: Bool { state == .canceling }
}
