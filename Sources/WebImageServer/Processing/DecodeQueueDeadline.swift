import Foundation
import Synchronization
import WebImage
@_spi(WebImageInternals) import WebImageCoders

/// Work on the library's decode queue with the processing deadline: the one place a render's
/// time limit and a client's cancellation stop decoding, processing and encoding.
extension ImageProxy {
    /// The limits a body on the decode queue works within: the cancellation raised when the
    /// processing timeout (counted from when it was queued) passes or the request is cancelled.
    /// Decoders, the processor and encoders check it; they get no time limit of their own, so a
    /// stop at the deadline is always answered as the timeout it is.
    struct WorkLimits: Sendable {
        let cancellation: CodingCancellation
    }

    /// Runs `body` on the library's decode queue (bounded, off the caller's thread pool), giving
    /// up after the processing timeout (504) or when the task is cancelled. Work that has not
    /// started by then never starts; work already running is told to stop (its ``WorkLimits``'
    /// cancellation) and is waited for, so the worker slot and `reservation` are freed only when
    /// it has ended: its memory and CPU stay counted.
    func onDecodeQueue<Value: Sendable>(
        holding reservation: DecodingMemoryBudget.Reservation? = nil,
        _ body: @escaping @Sendable (WorkLimits) throws(ProxyError) -> Value
    ) async throws(ProxyError) -> Value {
        let timeout = configuration.limits.processingTimeout
        let limits = WorkLimits(cancellation: CodingCancellation())
        let outcome = Outcome<Value>(cancellation: limits.cancellation, reservation: reservation)
        // The deadline is a dispatch timer, not a task: it fires on time however busy the
        // cooperative pool is, and its reason (504) answers whatever the stopped work throws.
        // A timer source, unlike `asyncAfter`, lets go of its handler (and the outcome) as soon
        // as it is cancelled, instead of holding both until the timeout would have passed.
        let deadline = DispatchSource.oneShot(after: timeout) { outcome.stop(.processingTimedOut(timeout)) }
        defer { deadline.cancel() }
        let result = await withTaskCancellationHandler {
            await withHandOffContinuation { continuation in
                outcome.wait(continuation)
                ImageWorkQueue.decoding.enqueue {
                    guard outcome.begin() else {  // timed out or cancelled while queued
                        reservation?.release()
                        return
                    }
                    let result = Result { () throws(ProxyError) in try body(limits) }
                    reservation?.release()  // before the waiter hears: the memory is free by then
                    outcome.finish(result)
                }
            }
        } onCancel: {
            outcome.stop(.cancelled)
        }
        return try result.get()
    }
}

/// The result of one body on the decode queue, handed to one waiting continuation: the body's
/// own, or the reason it was stopped (a timeout, a cancellation). A body stopped while queued
/// never starts and the waiter is answered at once; a running one is told to stop and answered
/// when it ends. Thread-safe; resumes outside its lock.
private final class Outcome<Value: Sendable>: Sendable {
    /// A waiter and the result to resume it with.
    typealias Ready = (HandOffContinuation<Result<Value, ProxyError>, Never>, Result<Value, ProxyError>)

    private struct State {
        var stopReason: ProxyError?
        var started = false
        var result: Result<Value, ProxyError>?
        var continuation: HandOffContinuation<Result<Value, ProxyError>, Never>?

        /// The continuation to resume with `result`, once both are there.
        mutating func takeReady() -> Ready? {
            guard let continuation, let result else { return nil }
            self.continuation = nil
            return (continuation, result)
        }
    }

    private let state = Mutex(State())
    private let cancellation: CodingCancellation
    /// Released when a body stopped before it started is answered (it allocated nothing); the
    /// queued closure releases it otherwise, once the body has ended.
    private let reservation: DecodingMemoryBudget.Reservation?

    init(cancellation: CodingCancellation, reservation: DecodingMemoryBudget.Reservation?) {
        self.cancellation = cancellation
        self.reservation = reservation
    }

    /// Hands the result to `continuation`, now or when it arrives.
    func wait(_ continuation: HandOffContinuation<Result<Value, ProxyError>, Never>) {
        let ready = state.withLock { state in
            state.continuation = continuation
            return state.takeReady()
        }
        if let (continuation, result) = ready { continuation.resume(returning: result) }
    }

    /// Whether the body may run (it was not stopped while queued).
    func begin() -> Bool {
        state.withLock { state in
            guard state.stopReason == nil else { return false }
            state.started = true
            return true
        }
    }

    /// The body ended: its result, unless it was stopped (then the reason).
    func finish(_ result: Result<Value, ProxyError>) {
        let ready = state.withLock { state in
            state.result = state.stopReason.map { .failure($0) } ?? result
            return state.takeReady()
        }
        if let (continuation, result) = ready { continuation.resume(returning: result) }
    }

    /// Stops the body for `reason` unless it ended or was stopped already: one not started is
    /// answered now (its memory released); a running one is cancelled and answered when it ends.
    func stop(_ reason: ProxyError) {
        let (stopped, started, ready) = state.withLock { state -> (Bool, Bool, Ready?) in
            guard state.stopReason == nil, state.result == nil else { return (false, false, nil) }
            state.stopReason = reason
            if !state.started { state.result = .failure(reason) }
            return (true, state.started, state.takeReady())
        }
        if stopped { cancellation.cancel() }
        if stopped && !started { reservation?.release() }
        if let (continuation, result) = ready { continuation.resume(returning: result) }
    }
}
