import Foundation
@_spi(WebImageInternals) import WebImageCoders

/// A budget for decoded pixels in flight: the bytes that the decodes running at once may
/// allocate, shared by every load that uses it (by default the whole process).
///
/// A decode reserves what its image's header says it will allocate
/// (`ImageHeader.decodedByteCount(with:)`) before it starts. When the budget has no room, the
/// load waits for running decodes to release theirs, first come first served; an image that alone
/// needs more than the whole budget fails with `limitExceeded` instead. Six URLs that each serve
/// a 764-byte, 1 GB animation then decode one or two at a time, not all at once.
///
/// Thread-safe. A reservation's waiters are granted on the thread that releases room, outside
/// the budget's lock.
public final class DecodingMemoryBudget: Sendable {
    /// The budget loads use unless their ``ImageContext`` names another: ``defaultLimit`` bytes.
    public static let shared = DecodingMemoryBudget(limit: defaultLimit)

    /// A quarter of ``SystemMemory/limit`` (the cgroup's limit when it is lower than RAM),
    /// between 64 MiB and 1 GiB (so the largest animation the decoders admit by default, 512 MiB,
    /// decodes at most two at a time).
    public static var defaultLimit: Int {
        Int(min(max(SystemMemory.current.limit / 4, 64 << 20), 1 << 30))
    }

    /// The most bytes reserved at once.
    public let limit: Int
    private let state = Protected(State())

    private struct Waiter {
        var id: UInt64
        var bytes: Int
        /// Called once: with the reservation, or with `nil` when the waiter was cancelled.
        var resume: @Sendable (Reservation?) -> Void
    }

    private struct State {
        var inUse = 0
        var peak = 0
        var waiters: [Waiter] = []
        var nextID: UInt64 = 0
        /// Cancellable reservations between taking an ID and joining `waiters`; `true` when
        /// cancelled in that window.
        var unqueued: [UInt64: Bool] = [:]

        /// Grants waiters in order while the first fits; returns them with their reservations.
        mutating func grantWaiting(_ budget: DecodingMemoryBudget) -> [(Reservation, Waiter)] {
            var granted: [(Reservation, Waiter)] = []
            while let first = waiters.first, inUse + first.bytes <= budget.limit {
                waiters.removeFirst()
                inUse += first.bytes
                granted.append((Reservation(bytes: first.bytes, budget: budget), first))
            }
            peak = max(peak, inUse)
            return granted
        }
    }

    /// A budget of `limit` bytes (at least 1).
    public init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// Bytes reserved now.
    public var bytesInUse: Int { state.withLock { $0.inUse } }
    /// The most bytes that were ever reserved at once.
    public var peakBytesInUse: Int { state.withLock { $0.peak } }
    /// Reservations waiting for room.
    public var waitingCount: Int { state.withLock { $0.waiters.count } }

    /// Whether `bytes` can ever be granted (it is not more than ``limit``).
    public func admits(_ bytes: Int) -> Bool { bytes <= limit }

    /// Reserves `bytes` (at most ``limit``): returns the reservation at once when there is room
    /// and nobody is waiting; otherwise returns `nil` and calls `granted` with it later, in
    /// request order, on the thread whose release made room. Release it when the decode is done
    /// (it also releases itself when dropped).
    public func reserve(
        _ bytes: Int,
        whenGranted granted: @escaping @Sendable (Reservation) -> Void
    ) -> Reservation? {
        let bytes = min(max(0, bytes), limit)
        let immediate = state.withLock { state -> Bool in
            guard state.waiters.isEmpty, state.inUse + bytes <= limit else {
                state.nextID += 1
                state.waiters.append(
                    Waiter(id: state.nextID, bytes: bytes) { reservation in
                        if let reservation { granted(reservation) }
                    }
                )
                return false
            }
            state.inUse += bytes
            state.peak = max(state.peak, state.inUse)
            return true
        }
        return immediate ? Reservation(bytes: bytes, budget: self) : nil
    }

    /// Reserves `bytes` only when there is room now and nobody is waiting; never queues. For work
    /// that can be skipped, such as progressive previews.
    public func reserveIfAvailable(_ bytes: Int) -> Reservation? {
        let bytes = min(max(0, bytes), limit)
        let granted = state.withLock { state -> Bool in
            guard state.waiters.isEmpty, state.inUse + bytes <= limit else { return false }
            state.inUse += bytes
            state.peak = max(state.peak, state.inUse)
            return true
        }
        return granted ? Reservation(bytes: bytes, budget: self) : nil
    }

    /// Reserves `bytes` (at most ``limit``), waiting for room in request order.
    public func reserve(_ bytes: Int) async -> Reservation {
        await withHandOffContinuation { continuation in
            if let reservation = reserve(bytes, whenGranted: { continuation.resume(returning: $0) }) {
                continuation.resume(returning: reservation)
            }
        }
    }

    /// Reserves `bytes` (at most ``limit``), waiting for room in request order; `nil` when the
    /// task is cancelled before it is granted (its place in line is given up, and the waiters
    /// behind it move up).
    public func reserveUnlessCancelled(_ bytes: Int) async -> Reservation? {
        let bytes = min(max(0, bytes), limit)
        enum Decision {
            case granted(Reservation)
            case wait(UInt64)
        }
        let decision = state.withLock { state -> Decision in
            if state.waiters.isEmpty, state.inUse + bytes <= limit {
                state.inUse += bytes
                state.peak = max(state.peak, state.inUse)
                return .granted(Reservation(bytes: bytes, budget: self))
            }
            state.nextID += 1
            state.unqueued[state.nextID] = false
            return .wait(state.nextID)
        }
        let id: UInt64
        switch decision {
        case .granted(let reservation): return reservation
        case .wait(let waiting): id = waiting
        }
        return await withTaskCancellationHandler {
            await withHandOffContinuation { (continuation: HandOffContinuation<Reservation?, Never>) in
                // Room may have been released since the decision: queue, then grant what fits.
                let (cancelled, granted) = state.withLock { state -> (Bool, [(Reservation, Waiter)]) in
                    if state.unqueued.removeValue(forKey: id) == true { return (true, state.grantWaiting(self)) }
                    state.waiters.append(Waiter(id: id, bytes: bytes) { continuation.resume(returning: $0) })
                    return (false, state.grantWaiting(self))
                }
                if cancelled { continuation.resume(returning: nil) }
                for (reservation, waiter) in granted { waiter.resume(reservation) }
            }
        } onCancel: {
            let (removed, granted) = state.withLock { state -> (Waiter?, [(Reservation, Waiter)]) in
                if let index = state.waiters.firstIndex(where: { $0.id == id }) {
                    let waiter = state.waiters.remove(at: index)
                    return (waiter, state.grantWaiting(self))
                }
                // Not queued yet: the continuation will see this. Otherwise it was granted.
                if state.unqueued[id] != nil { state.unqueued[id] = true }
                return (nil, [])
            }
            removed?.resume(nil)
            for (reservation, waiter) in granted { waiter.resume(reservation) }
        }
    }

    fileprivate func release(_ bytes: Int) {
        let granted = state.withLock { state -> [(Reservation, Waiter)] in
            state.inUse -= bytes
            return state.grantWaiting(self)
        }
        for (reservation, waiter) in granted { waiter.resume(reservation) }
    }

    /// Bytes held from a ``DecodingMemoryBudget``; released once, by ``release()`` or when dropped.
    public final class Reservation: Sendable {
        /// The bytes held.
        public let bytes: Int
        private let budget: DecodingMemoryBudget
        private let released = Protected(false)

        fileprivate init(bytes: Int, budget: DecodingMemoryBudget) {
            self.bytes = bytes
            self.budget = budget
        }

        /// Gives the bytes back, granting waiting reservations that now fit. Later calls do nothing.
        public func release() {
            let first = released.withLock { released in
                guard !released else { return false }
                released = true
                return true
            }
            if first { budget.release(bytes) }
        }

        deinit { release() }
    }
}
