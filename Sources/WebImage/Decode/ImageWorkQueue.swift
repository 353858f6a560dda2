import Dispatch
import Foundation
import WebImageCoders

/// A queue that runs at most ``width`` pieces of work at once on GCD's worker threads (never the
/// Swift cooperative pool or an event loop), highest priority first and first come first served
/// within a priority: the bounded stages that read the disk, decode and transform images.
///
/// Work that has not started can be cancelled; it then never runs and its place goes to the next.
/// Thread-safe; work runs outside the queue's lock.
public final class ImageWorkQueue: Sendable {
    /// The order work starts in: high before normal before low, as the downloader orders loads.
    public enum Priority: Int, Sendable, Comparable, CaseIterable {
        case low, normal, high

        public static func < (lhs: Priority, rhs: Priority) -> Bool { lhs.rawValue < rhs.rawValue }

        /// `highPriority` → high, `lowPriority` → low, else normal.
        public init(_ options: ImageOptions) {
            self = options.contains(.highPriority) ? .high : options.contains(.lowPriority) ? .low : .normal
        }
    }

    /// Where loads decode unless their ``ImageContext`` names another queue: one decode per core.
    public static let decoding = ImageWorkQueue(width: ProcessInfo.processInfo.activeProcessorCount)

    /// Where ``ImageManager`` transforms images unless their ``ImageContext`` names another
    /// queue: one transform per core.
    public static let transforming = ImageWorkQueue(width: ProcessInfo.processInfo.activeProcessorCount)

    /// Where disk-cache queries and `file://` loads read unless configured otherwise: two reads
    /// at once (disks gain little from more, and a read should not wait behind a decode).
    public static let diskReading = ImageWorkQueue(width: 2)

    /// The most pieces of work running at once (at least 1).
    public let width: Int
    private let state = Protected(State())

    private struct State {
        var running = 0
        var peakRunning = 0
        var nextID: UInt64 = 0
        /// Waiting work by priority, each in arrival order.
        var waiting: [Priority: [(id: UInt64, work: @Sendable () -> Void)]] = [:]

        mutating func takeNext() -> (@Sendable () -> Void)? {
            for priority in Priority.allCases.reversed() {
                if let first = waiting[priority]?.first {
                    waiting[priority]?.removeFirst()
                    return first.work
                }
            }
            return nil
        }
    }

    /// A queue running at most `width` pieces of work at once.
    public init(width: Int) {
        self.width = max(1, width)
    }

    /// Work running now.
    public var runningCount: Int { state.withLock { $0.running } }
    /// The most work that ever ran at once.
    public var peakRunningCount: Int { state.withLock { $0.peakRunning } }
    /// Work waiting for a place.
    public var waitingCount: Int { state.withLock { $0.waiting.values.reduce(0) { $0 + $1.count } } }

    /// Runs `work` when a place is free and no work of a higher priority, or of the same
    /// priority but older, is waiting.
    /// - Returns: a handle that cancels the work while it has not started.
    @discardableResult
    public func enqueue(priority: Priority = .normal, _ work: @escaping @Sendable () -> Void) -> Item {
        let (id, runsNow) = state.withLock { state -> (UInt64, Bool) in
            state.nextID += 1
            guard state.running < width else {
                state.waiting[priority, default: []].append((state.nextID, work))
                return (state.nextID, false)
            }
            state.running += 1
            state.peakRunning = max(state.peakRunning, state.running)
            return (state.nextID, true)
        }
        if runsNow { start(work) }
        return Item(id: id, priority: priority, queue: self)
    }

    private func start(_ work: @escaping @Sendable () -> Void) {
        DispatchQueue.global().async { [self] in
            work()
            finished()
        }
    }

    private func finished() {
        let next = state.withLock { state -> (@Sendable () -> Void)? in
            guard let next = state.takeNext() else {
                state.running -= 1
                return nil
            }
            return next
        }
        if let next { start(next) }
    }

    /// Removes waiting work; `true` when it had not started (it never will).
    fileprivate func cancel(id: UInt64, priority: Priority) -> Bool {
        state.withLock { state in
            guard let index = state.waiting[priority]?.firstIndex(where: { $0.id == id }) else { return false }
            state.waiting[priority]?.remove(at: index)
            return true
        }
    }

    /// One piece of work on an ``ImageWorkQueue``.
    public struct Item: Sendable {
        fileprivate let id: UInt64
        fileprivate let priority: Priority
        fileprivate let queue: ImageWorkQueue

        /// Takes the work off the queue if it has not started; `true` when it will never run.
        @discardableResult
        public func cancel() -> Bool { queue.cancel(id: id, priority: priority) }
    }
}
