import WebImageCoders

/// Work a download holds while it runs (its HTTP task and preview decoder), stopped when the
/// last caller leaves.
protocol DownloadWork {
    /// Stops the transfer and the previews.
    func stop()
}

/// The lifecycle of a ``DownloadOperation`` as a pure state machine: each event changes the
/// phase and returns what to do once the lock is released (call completions, stop the work).
/// Generic over the caller's identity, its handler and the work, so it is tested without sockets.
struct DownloadStateMachine<Caller: Hashable, Handler, Work: DownloadWork> {
    enum Phase: Equatable {
        /// Created; callers join, nothing is sent yet.
        case waiting
        /// The request is on its way (or being built).
        case running
        /// The final completion is going out to the callers that joined before; a caller arriving
        /// now starts a new load (its result was in before it asked).
        case delivering
        /// Every caller had its completion, or the last one left: nobody joins any more.
        case finished
    }

    private(set) var phase = Phase.waiting
    /// The first caller's options without the priority flags.
    private let baseOptions: ImageOptions
    /// The priority while no caller waits: the first caller's.
    private var restingPriority: ImagePriority
    private var handlers: [Caller: (order: UInt64, handler: Handler, priority: ImagePriority)] = [:]
    private var nextOrder: UInt64 = 0
    private var work: Work?

    init(options: ImageOptions) {
        baseOptions = options.subtracting([.highPriority, .lowPriority])
        restingPriority = ImagePriority(options)
    }

    /// The highest priority a waiting caller asks for. Closures, not key paths, here and below: a
    /// key path into this generic type's tuples is instantiated at run time on every use (2 % of
    /// a 1,000-image fetch's CPU, asked for on each start and options read).
    var priority: ImagePriority {
        var highest: ImagePriority?
        for entry in handlers.values where highest.map({ entry.priority > $0 }) ?? true { highest = entry.priority }
        return highest ?? restingPriority
    }

    /// The callers' combined options: the first caller's, with high priority when any waiting
    /// caller asks for it and low only when every one does.
    var options: ImageOptions { baseOptions.union(priority.options) }

    /// Whether the load is still wanted (and callers may join: until the result is in):
    /// previews and the decode skip their work when not.
    var isWanted: Bool { phase == .waiting || phase == .running }

    /// The callers waiting for the result, in arrival order.
    var callers: [Caller] { inArrivalOrder { caller, _ in caller } }

    /// Handlers of callers still waiting, in arrival order; empty once the result goes out.
    var waitingHandlers: [Handler] {
        guard isWanted else { return [] }
        return inArrivalOrder { _, handler in handler }
    }

    /// `transform` of each waiting caller and its handler, in arrival order (most loads have one
    /// caller: no sort then).
    private func inArrivalOrder<Element>(_ transform: (Caller, Handler) -> Element) -> [Element] {
        if handlers.count <= 1 { return handlers.map { transform($0.key, $0.value.handler) } }
        return handlers.sorted { $0.value.order < $1.value.order }.map { transform($0.key, $0.value.handler) }
    }

    /// A caller joins at the priority its options ask for; `false` once the result is in (the
    /// caller starts a new load: a load that ended before it asked is not its answer, whether it
    /// wants the network's, `fromLoaderOnly`, or a cache's that may have changed since).
    mutating func join(_ caller: Caller, options callerOptions: ImageOptions, handler: Handler) -> Bool {
        guard isWanted else { return false }
        nextOrder += 1
        handlers[caller] = (nextOrder, handler, ImagePriority(callerOptions))
        return true
    }

    /// Changes a waiting caller's priority; `false` when it is not waiting.
    mutating func setPriority(_ priority: ImagePriority, for caller: Caller) -> Bool {
        guard isWanted, handlers[caller] != nil else { return false }
        handlers[caller]?.priority = priority
        return true
    }

    /// What to do when a caller leaves.
    enum LeaveAction {
        /// Not a waiting caller (its completion went out, or it never joined).
        case none
        /// Give the caller `cancelled`; others still want the load.
        case cancelCaller(Handler)
        /// Give the caller `cancelled` and stop the work: it was the last one.
        case cancelCallerAndStop(Handler, Work?)
    }

    /// A caller leaves; the last one to leave a load that has not delivered abandons it.
    mutating func leave(_ caller: Caller) -> LeaveAction {
        guard let (_, handler, _) = handlers.removeValue(forKey: caller) else { return .none }
        guard handlers.isEmpty, isWanted else { return .cancelCaller(handler) }
        phase = .finished
        defer { work = nil }
        return .cancelCallerAndStop(handler, work)
    }

    /// Every caller leaves at once: give each `cancelled` and stop the work.
    mutating func cancelAll() -> (handlers: [Handler], work: Work?) {
        let waiting = inArrivalOrder { _, handler in handler }
        handlers.removeAll()
        phase = .finished
        defer { work = nil }
        return (waiting, work)
    }

    /// The downloader starts the load: the options to build the request with, or `nil` when
    /// every caller left before its turn (nothing to send).
    mutating func start() -> ImageOptions? {
        guard phase == .waiting else { return nil }
        phase = .running
        return options
    }

    /// Records work the load started; `false` when it is no longer wanted (the caller stops it).
    mutating func attach(_ change: (inout Work) -> Void, initial: Work) -> Bool {
        guard isWanted else { return false }
        var current = work ?? initial
        change(&current)
        work = current
        return true
    }

    /// The work, while the load is wanted (to feed previews).
    var runningWork: Work? { isWanted ? work : nil }

    /// The result is ready: the load's work is done (returned so its previews stop), and the
    /// phase becomes delivering.
    mutating func beginDelivery() -> Work? {
        guard phase != .finished else { return nil }
        phase = .delivering
        defer { work = nil }
        return work
    }

    /// The callers to give the final completion to now (they leave), in arrival order; `nil`
    /// when none is left: the operation is then finished.
    mutating func takeFinalBatch() -> [(caller: Caller, handler: Handler)]? {
        guard phase == .delivering, !handlers.isEmpty else {
            phase = .finished
            return nil
        }
        defer { handlers.removeAll() }
        return inArrivalOrder { caller, handler in (caller, handler) }
    }
}

extension DownloadStateMachine: Sendable where Caller: Sendable, Handler: Sendable, Work: Sendable {}
