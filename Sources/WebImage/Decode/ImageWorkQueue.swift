import CWebImageSystem
import Dispatch
import Foundation
import WebImageCoders

/// A queue that runs at most ``width`` pieces of work at once on threads of its own, highest
/// priority first and first come first served within a priority: the bounded stages that read
/// the disk, decode and transform images.
///
/// The threads are its own because on Linux the Swift cooperative pool and `DispatchQueue.global()`
/// share one pool of as many threads as cores: blocking C decodes there would stall every task
/// (a decoded image would wait for its consumer while the next decode starts). A thread stays
/// for ``idleTimeout`` after its last work, then ends; an unused queue holds no thread.
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
    public static let decoding = ImageWorkQueue(width: ProcessInfo.processInfo.activeProcessorCount, name: "decode")

    /// Where ``ImageManager`` transforms images unless their ``ImageContext`` names another
    /// queue: one transform per core.
    public static let transforming = ImageWorkQueue(
        width: ProcessInfo.processInfo.activeProcessorCount,
        name: "transform"
    )

    /// Where disk-cache queries and `file://` loads read unless configured otherwise: two reads
    /// at once (disks gain little from more, and a read should not wait behind a decode).
    public static let diskReading = ImageWorkQueue(width: 2, name: "disk-read")

    /// The most pieces of work running at once (at least 1).
    public let width: Int
    /// How long a thread waits for more work before it ends.
    public let idleTimeout: Duration
    private let name: String
    /// Guards `state`; idle threads wait on it for work.
    private let condition = NSCondition()
    // Safety (why `nonisolated(unsafe)` holds):
    // - Every read and write of `state.pointee` happens with `condition` locked: in `locked`
    //   (lock/defer unlock) and in `runWorker`, which takes the lock first and gives it up only
    //   around `work()` and inside `condition.wait`, touching `state` at neither point. So no
    //   two threads ever access the pointee at once.
    // - The pointer itself is immutable (`let`), set in `init` before `self` is shared and freed
    //   in `deinit`, which runs only once no worker exists: each worker's closure holds `self`.
    // A pointer rather than a stored `var`: the lock is released inside the worker's loop, and
    // Swift's exclusivity checks on a class property would see one access spanning that.
    nonisolated(unsafe) private let state: UnsafeMutablePointer<State>

    private struct State {
        var threads = 0
        var idleThreads = 0
        /// Work that has a place: running on a thread, or in `ready` for one to pick up.
        var running = 0
        var peakRunning = 0
        var nextID: UInt64 = 0
        /// Work given a place that no thread has picked up yet, in order.
        var ready: [@Sendable () -> Void] = []
        /// Waiting work by priority, each in arrival order.
        var waiting: [Priority: [(id: UInt64, work: @Sendable () -> Void)]] = [:]
        var waitingCount = 0

        mutating func takeNext() -> (@Sendable () -> Void)? {
            for priority in Priority.allCases.reversed() {
                if let first = waiting[priority]?.first {
                    waiting[priority]?.removeFirst()
                    waitingCount -= 1
                    return first.work
                }
            }
            return nil
        }
    }

    /// A queue running at most `width` pieces of work at once.
    /// - Parameters:
    ///   - width: the most work running at once; less than 1 counts as 1.
    ///   - name: names its threads (`webimage.NAME`, its first 15 bytes on Linux), for debuggers,
    ///     `top -H` and `ps -T`.
    ///   - idleTimeout: how long a thread waits for more work before it ends. Default 2 seconds.
    public init(width: Int, name: String = "work", idleTimeout: Duration = .seconds(2)) {
        self.width = max(1, width)
        self.name = name
        self.idleTimeout = idleTimeout
        state = .allocate(capacity: 1)
        state.initialize(to: State())
    }

    deinit {
        state.deinitialize(count: 1)
        state.deallocate()
    }

    private func locked<Result>(_ body: (inout State) -> Result) -> Result {
        condition.lock()
        defer { condition.unlock() }
        return body(&state.pointee)
    }

    /// Work running now.
    public var runningCount: Int { locked { $0.running } }
    /// The most work that ever ran at once.
    public var peakRunningCount: Int { locked { $0.peakRunning } }
    /// Work waiting for a place.
    public var waitingCount: Int { locked { $0.waitingCount } }
    /// Threads the queue has now, busy or idle (at most ``width``).
    public var threadCount: Int { locked { $0.threads } }

    /// Runs `work` when a place is free and no work of a higher priority, or of the same
    /// priority but older, is waiting.
    /// - Returns: a handle that cancels the work while it has not started.
    @discardableResult
    public func enqueue(priority: Priority = .normal, _ work: @escaping @Sendable () -> Void) -> Item {
        let (id, startsThread) = locked { state -> (UInt64, Bool) in
            state.nextID += 1
            guard state.running < width else {
                state.waiting[priority, default: []].append((state.nextID, work))
                state.waitingCount += 1
                return (state.nextID, false)
            }
            state.running += 1
            state.peakRunning = max(state.peakRunning, state.running)
            state.ready.append(work)
            // Each idle thread picks up one ready piece; more ready than that needs a thread.
            guard state.ready.count > state.idleThreads, state.threads < width else { return (state.nextID, false) }
            state.threads += 1
            return (state.nextID, true)
        }
        if startsThread {
            startThread()
        } else {
            condition.signal()
        }
        return Item(id: id, priority: priority, queue: self)
    }

    private func startThread() {
        // Foundation on Linux does not pass `Thread.name` to the system: the thread names itself.
        let thread = Thread { [self] in
            wi_name_current_thread("webimage.\(name)")
            runWorker()
        }
        thread.name = "webimage.\(name)"
        thread.stackSize = 8 << 20  // as a main thread's: some codecs keep large buffers on the stack
        thread.start()
    }

    /// A thread's life: run ready work, hand each finished piece's place to the next waiting
    /// piece, wait up to `idleTimeout` for more, then end.
    private func runWorker() {
        let timeout = Double(idleTimeout.components.seconds) + Double(idleTimeout.components.attoseconds) / 1e18
        condition.lock()
        while true {
            if !state.pointee.ready.isEmpty {
                let work = state.pointee.ready.removeFirst()
                condition.unlock()
                work()
                condition.lock()
                if let next = state.pointee.takeNext() {
                    state.pointee.ready.append(next)  // the place passes on; `running` stays
                } else {
                    state.pointee.running -= 1
                }
                continue
            }
            state.pointee.idleThreads += 1
            let signalled = condition.wait(until: Date(timeIntervalSinceNow: timeout))
            state.pointee.idleThreads -= 1
            if !signalled, state.pointee.ready.isEmpty {
                state.pointee.threads -= 1
                condition.unlock()
                return
            }
        }
    }

    /// Removes waiting work; `true` when it had not started (it never will).
    fileprivate func cancel(id: UInt64, priority: Priority) -> Bool {
        locked { state in
            guard let index = state.waiting[priority]?.firstIndex(where: { $0.id == id }) else { return false }
            state.waiting[priority]?.remove(at: index)
            state.waitingCount -= 1
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
