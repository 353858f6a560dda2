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
/// Copies share one value and one lock (the storage is one object: the value and the mutex in
/// a single allocation). The mutex is the default (non-recursive) kind: re-entering `withLock`
/// deadlocks, it never races.
// SPI, not `package`: the optimiser inlines and specialises an `@inlinable` body in other
// modules only for public declarations; a `package` one was called unspecialised at each of 604
// call sites of the `webimage` binary (generic metadata lookups on every lock). Modules of this
// package import it with `@_spi(WebImageInternals) import WebImageCoders`.
//
// Safety (@unchecked Sendable): the mutable state is the storage's header (the value) and its
// one element (the mutex). The mutex is initialized in `make` before the object is shared,
// changed only by `pthread_mutex_lock`/`unlock` (made for concurrent callers) and destroyed in
// `deinit`, when no other reference exists. The storage is internal: outside this file only the
// inlinable bodies of `init` and `withLock` reach it (`@usableFromInline`), and being public or
// inlined into another module changes no step of theirs. The value is read or written only
// inside `ProtectedStorage.withLock`, between lock and unlock; it is set in `make` before the
// object is shared and released with the object; so no two threads ever touch it at once.
// `body` is non-escaping and gets the value `inout`, so it cannot keep a reference past the
// call, and `Value: Sendable`, so copies that leave the lock may cross threads. (The storage
// class cannot carry the conformance: `ManagedBuffer` is declared non-Sendable.)
@_spi(WebImageInternals) public struct Protected<Value: Sendable>: @unchecked Sendable {
    @usableFromInline let storage: ProtectedStorage<Value>

    @inlinable
    public init(_ value: Value) { storage = ProtectedStorage.make(value) }

    /// Runs `body` with exclusive access to the value. Inlinable: callers in other modules get it
    /// specialized for their types (no generic metadata lookups per call).
    @inlinable
    public func withLock<Result, Failure: Error>(
        _ body: (inout Value) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try storage.withLock(body)
    }
}

/// ``Protected``'s one allocation: the value as the buffer's header, the mutex as its only
/// element (tail-allocated, so its address is stable for the object's life).
@usableFromInline
final class ProtectedStorage<Value: Sendable>: ManagedBuffer<Value, pthread_mutex_t> {
    @inlinable
    static func make(_ value: Value) -> ProtectedStorage<Value> {
        let storage = unsafeDowncast(create(minimumCapacity: 1) { _ in value }, to: ProtectedStorage<Value>.self)
        storage.withUnsafeMutablePointerToElements { mutex in
            mutex.initialize(to: pthread_mutex_t())
            _ = pthread_mutex_init(mutex, nil)
        }
        return storage
    }

    deinit {
        _ = withUnsafeMutablePointerToElements { pthread_mutex_destroy($0) }
    }

    @inlinable
    func withLock<Result, Failure: Error>(
        _ body: (inout Value) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try withUnsafeMutablePointers { (value, mutex) throws(Failure) -> Result in
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            return try body(&value.pointee)
        }
    }
}
