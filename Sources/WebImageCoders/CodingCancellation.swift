import CWebImageShims

/// Stops a decode, encode or resize in progress at its next check: between rows in the JPEG and
/// PNG encoders and the resampler, in libwebp's progress callback, between frames elsewhere. The
/// stopped work throws `limitExceeded` ("… was stopped"). Give one to
/// ``ImageDecodingOptions/cancellation`` and ``ImageEncodingOptions/cancellation``, and call
/// ``cancel()`` from any thread (a timeout, a client gone). Equal only to itself.
public final class CodingCancellation: Sendable, Hashable {
    /// The C flag the encoders poll. Safe to share: the pointer never changes after `init`, the
    /// flag behind it is only read and written through C11 atomics (`wi_stop_request`,
    /// `wi_stop_requested`), and it is freed in `deinit`, when no work can hold this object.
    nonisolated(unsafe) let flag: OpaquePointer?

    public init() { flag = wi_stop_create() }

    deinit { wi_stop_destroy(flag) }

    /// Asks the work to stop at its next check. Idempotent.
    public func cancel() { wi_stop_request(flag) }

    /// Whether ``cancel()`` was called.
    public var isCancelled: Bool { wi_stop_requested(flag) != 0 }

    /// For tests and fuzzing (`@_spi(Testing) import WebImageCoders`): the flag raises itself at
    /// the `checks`-th check the work makes from now (1: the first), so a test can stop an encode
    /// at each of its check points in turn. `Int.max` only counts (`checksMade`); 0 disarms it.
    @_spi(Testing) public func cancel(afterChecks checks: Int) { wi_stop_request_after(flag, Int64(checks)) }

    /// For tests: the checks made since `cancel(afterChecks:)` armed the flag.
    @_spi(Testing) public var checksMade: Int { Int(wi_stop_checks(flag)) }

    public static func == (lhs: CodingCancellation, rhs: CodingCancellation) -> Bool { lhs === rhs }

    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
