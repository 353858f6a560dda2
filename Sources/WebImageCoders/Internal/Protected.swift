#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A value behind a `pthread_mutex_t`: the lock every concurrent type in the package uses.
///
/// Like `Synchronization.Mutex`, but built on pthreads, which ThreadSanitizer understands
/// (the standard library's futex-based `Mutex` is invisible to it on Linux, so every access
/// under it is reported as a race). Keep the closures short: they run with the lock held.
// Safety (@unchecked Sendable): the only mutable state is `value`, which is not visible outside
// this file's type (`@usableFromInline` only so `withLock` can be inlined and specialized in
// other modules; nothing else names it) and is read or written only inside `withLock`, between `pthread_mutex_lock` and `pthread_mutex_unlock` of
// `mutex` (allocated once in `init`, destroyed in `deinit` when no other reference exists), so
// no two threads ever touch it at once. `body` gets it `inout`, so it cannot keep a reference
// past the call, and `Value: Sendable`, so copies that leave the lock may cross threads. The
// mutex is the default (non-recursive) kind: re-entering `withLock` deadlocks, it never races.
package final class Protected<Value: Sendable>: @unchecked Sendable {
    @usableFromInline var value: Value
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>

    package init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value. Inlinable: callers in other modules get it
    /// specialized for their types (no generic metadata lookups per call).
    @inlinable
    package func withLock<Result, Failure: Error>(
        _ body: (inout Value) throws(Failure) -> Result
    ) throws(Failure)
        -> Result
    {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
