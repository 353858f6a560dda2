import Synchronization

/// A `CheckedContinuation` whose resume ThreadSanitizer sees as happening before the waiter
/// goes on, whichever of the two comes first.
///
/// The Swift runtime tells ThreadSanitizer about a resume only when the task had already
/// suspended: when the resume comes first, `await` returns without an acquire, and everything
/// the resuming thread wrote before it (a decoded image, a cache entry) reads as a data race in
/// the waiter. Memory is ordered either way (the runtime's own atomics), so this changes what
/// ThreadSanitizer sees, not what the program does: the resumer releases a fence, the waiter
/// acquires it after `await`. Use it wherever a callback on another thread hands over a value.
/// SPI and inlinable, as `Protected` is, so callers in other modules get it specialised.
@_spi(WebImageInternals)
public struct HandOffContinuation<Value: Sendable, Failure: Error>: Sendable {
    @usableFromInline let continuation: CheckedContinuation<Value, Failure>
    @usableFromInline let fence: HandOffFence

    @inlinable
    init(_ continuation: CheckedContinuation<Value, Failure>, fence: HandOffFence) {
        self.continuation = continuation
        self.fence = fence
    }

    /// Resumes the waiter with `value`. Call exactly one resume method once.
    @inlinable
    public func resume(returning value: Value) {
        fence.release()
        continuation.resume(returning: value)
    }

    /// Resumes the waiter by throwing `error`.
    @inlinable
    public func resume(throwing error: Failure) {
        fence.release()
        continuation.resume(throwing: error)
    }

    /// Resumes the waiter with `result`'s value or error.
    @inlinable
    public func resume(with result: Result<Value, Failure>) {
        fence.release()
        continuation.resume(with: result)
    }
}

@_spi(WebImageInternals)
extension HandOffContinuation where Value == Void {
    /// Resumes the waiter.
    @inlinable
    public func resume() { resume(returning: ()) }
}

/// `withCheckedContinuation` with a ``HandOffContinuation``: suspends the task until `body`'s
/// continuation is resumed, once, from any thread.
@_spi(WebImageInternals)
@inlinable
public func withHandOffContinuation<Value: Sendable>(
    isolation: isolated (any Actor)? = #isolation,
    function: String = #function,
    _ body: (HandOffContinuation<Value, Never>) -> Void
) async -> Value {
    let fence = HandOffFence()
    let value = await withCheckedContinuation(isolation: isolation, function: function) { continuation in
        body(HandOffContinuation(continuation, fence: fence))
    }
    fence.acquire()
    return value
}

/// `withCheckedThrowingContinuation` with a ``HandOffContinuation``: suspends the task until
/// `body`'s continuation returns a value or throws.
@_spi(WebImageInternals)
@inlinable
public func withThrowingHandOffContinuation<Value: Sendable>(
    isolation: isolated (any Actor)? = #isolation,
    function: String = #function,
    _ body: (HandOffContinuation<Value, any Error>) -> Void
) async throws -> Value {
    let fence = HandOffFence()
    defer { fence.acquire() }
    return try await withCheckedThrowingContinuation(isolation: isolation, function: function) { continuation in
        body(HandOffContinuation(continuation, fence: fence))
    }
}

/// A flag the resumer sets with release ordering and the waiter reads with acquire ordering:
/// ThreadSanitizer instruments these atomics, so it sees the hand-over. Setting it twice (a
/// second resume) traps, naming the hand-over, before the checked continuation's own trap.
@usableFromInline
final class HandOffFence: Sendable {
    private let handedOver = Atomic<Bool>(false)

    @usableFromInline init() {}

    @usableFromInline func release() {
        let first = handedOver.compareExchange(expected: false, desired: true, ordering: .releasing).exchanged
        precondition(first, "HandOffContinuation resumed more than once")
    }

    @usableFromInline func acquire() { _ = handedOver.load(ordering: .acquiring) }
}
