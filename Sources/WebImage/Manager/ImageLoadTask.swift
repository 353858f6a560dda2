import Foundation
import WebImageCoders

/// One load of an ``ImageLoadKey`` for every caller that wants it: the cache query, the
/// loader's load, the transform and the store run once, and each event goes to every
/// subscriber (an ``ImageLoadOperation``).
///
/// The task stays joinable until its final event has reached every subscriber, including
/// subscribers that joined while it was being delivered; it then closes and leaves the pool,
/// and a later caller starts a new task (whose cache query finds what this one stored). When its
/// last subscriber cancels first, the task is abandoned: its cache query and its loader interest
/// are cancelled and its remaining stages skip their work.
///
/// The stages (``run()`` and what follows it in `ImageLoadTask+Stages.swift`) are the task's
/// methods: they read the load's ``Inputs`` and the manager's services from the task instead of
/// passing them along.
///
/// Thread-safe: subscribers are called outside the task's lock.
final class ImageLoadTask: Sendable {
    /// What one load is asked for, fixed when it starts.
    struct Inputs: Sendable {
        let url: URL
        let cacheKey: ImageCacheKey
        let options: ImageOptions
        /// Filled with the manager's queues and budget.
        let context: ImageContext
        /// The manager's settings when the load started.
        let configuration: ImageManager.Configuration
        /// Whether the caller looked in memory already (the cache query then reads the disk only).
        let checkedMemory: Bool
        /// The cache key's string.
        let key: String

        init(
            url: URL,
            cacheKey: ImageCacheKey,
            options: ImageOptions,
            context: ImageContext,
            configuration: ImageManager.Configuration,
            checkedMemory: Bool
        ) {
            self.url = url
            self.cacheKey = cacheKey
            self.options = options
            self.context = context
            self.configuration = configuration
            self.checkedMemory = checkedMemory
            key = cacheKey.rawValue
        }
    }

    let key: ImageLoadKey
    let inputs: Inputs
    /// The caches, loaders and failed-URL list the stages use. The task holds its manager until
    /// it closes (the manager drops the task then).
    let manager: ImageManager
    private let state = Protected(State())
    private let onClose: @Sendable (ImageLoadTask) -> Void

    /// A task loading `inputs` with `manager`'s services. `onClose` runs once, when the task
    /// closed (delivered or abandoned): the pool lets go of it.
    init(
        key: ImageLoadKey,
        inputs: Inputs,
        manager: ImageManager,
        onClose: @escaping @Sendable (ImageLoadTask) -> Void
    ) {
        self.key = key
        self.inputs = inputs
        self.manager = manager
        self.onClose = onClose
    }

    /// The task's lifecycle. Events change the phase and say what to do outside the lock.
    struct State {
        enum Phase: Equatable {
            /// Stages run; callers may join.
            case running
            /// The final event is going out; callers may still join and get it.
            case delivering
            /// Delivered, or abandoned by every subscriber: nobody joins any more.
            case closed(abandoned: Bool)
        }

        var phase = Phase.running
        var subscribers: [UInt64: ImageLoadOperation] = [:]
        var priorities: [UInt64: ImagePriority] = [:]
        var nextID: UInt64 = 0
        var cacheOperation: (any ImageCacheOperation)?
        var loaderToken: (any ImageLoadingToken)?

        /// Adds a subscriber at `priority`; `nil` when the task is closed.
        mutating func subscribe(_ operation: ImageLoadOperation, priority: ImagePriority = .normal) -> UInt64? {
            guard !phase.isClosed else { return nil }
            nextID += 1
            subscribers[nextID] = operation
            priorities[nextID] = priority
            return nextID
        }

        /// The highest priority a subscriber asks for.
        var priority: ImagePriority { priorities.values.max() ?? .normal }

        /// What to cancel when the last subscriber left a running task.
        struct Abandonment {
            var cacheOperation: (any ImageCacheOperation)?
            var loaderToken: (any ImageLoadingToken)?
        }

        /// Removes a subscriber; the work to cancel when that abandons the task.
        mutating func unsubscribe(_ id: UInt64) -> Abandonment? {
            priorities[id] = nil
            guard subscribers.removeValue(forKey: id) != nil, subscribers.isEmpty, phase == .running else { return nil }
            phase = .closed(abandoned: true)
            defer {
                cacheOperation = nil
                loaderToken = nil
            }
            return Abandonment(cacheOperation: cacheOperation, loaderToken: loaderToken)
        }

        /// The subscribers to give the final event to now (they leave the task), or `nil` when
        /// none is left: the task is then closed.
        mutating func takeFinalBatch() -> [ImageLoadOperation]? {
            guard !phase.isClosed else { return nil }
            guard !subscribers.isEmpty else {
                phase = .closed(abandoned: false)
                cacheOperation = nil
                loaderToken = nil
                return nil
            }
            phase = .delivering
            defer {
                subscribers.removeAll()
                priorities.removeAll()
            }
            return subscribers.sorted { $0.key < $1.key }.map(\.value)
        }
    }

    /// Whether every subscriber left before the result: stages skip their work.
    var isCancelled: Bool { state.withLock { $0.phase == .closed(abandoned: true) } }

    /// Adds `operation` at `priority`: its subscription, and the raised task priority to pass to
    /// the loader once the caller released its own locks (``PriorityChange/apply()``); `nil`
    /// when the task is closed (start a new one).
    func subscribe(_ operation: ImageLoadOperation, priority: ImagePriority) -> (id: UInt64, change: PriorityChange?)? {
        state.withLock { state in
            let before = state.priority
            guard let id = state.subscribe(operation, priority: priority) else { return nil }
            return (id, state.priorityChange(from: before))
        }
    }

    /// The task's priority: the highest its subscribers ask for.
    var priority: ImagePriority { state.withLock { $0.priority } }

    /// Changes one subscriber's priority; the loader's queue sees the task's new priority.
    func setPriority(_ priority: ImagePriority, subscription: UInt64) {
        let change = state.withLock { state -> PriorityChange? in
            guard state.phase == .running, state.priorities[subscription] != nil else { return nil }
            let before = state.priority
            state.priorities[subscription] = priority
            return state.priorityChange(from: before)
        }
        change?.apply()
    }

    /// A new task priority to pass to the loader, outside the lock.
    struct PriorityChange {
        var token: any ImageLoadingToken
        var priority: ImagePriority

        func apply() { token.setPriority(priority) }
    }

    /// Removes a subscriber; the last one to leave a running task cancels its work, and the
    /// others keep the highest priority still asked for.
    func unsubscribe(_ id: UInt64) {
        let (abandonment, change) = state.withLock { state -> (State.Abandonment?, PriorityChange?) in
            let before = state.priority
            let abandonment = state.unsubscribe(id)
            return (abandonment, abandonment == nil ? state.priorityChange(from: before) : nil)
        }
        change?.apply()
        guard let abandonment else { return }
        abandonment.cacheOperation?.cancel()
        abandonment.loaderToken?.cancel()
        onClose(self)
    }

    /// Records the running cache query, cancelling it at once when the task was abandoned.
    func attach(cacheOperation: (any ImageCacheOperation)?) {
        let abandoned = state.withLock { state in
            guard state.phase == .running else { return state.phase == .closed(abandoned: true) }
            state.cacheOperation = cacheOperation
            return false
        }
        if abandoned { cacheOperation?.cancel() }
    }

    /// Records the loader interest, cancelling it at once when the task was abandoned. The loader
    /// was asked at `requestedPriority`; a change since then reaches it now.
    func attach(loaderToken: (any ImageLoadingToken)?, requestedPriority: ImagePriority) {
        let (abandoned, current) = state.withLock { state -> (Bool, ImagePriority) in
            guard state.phase == .running else { return (state.phase == .closed(abandoned: true), requestedPriority) }
            state.loaderToken = loaderToken
            return (false, state.priority)
        }
        if abandoned { loaderToken?.cancel() }
        if current != requestedPriority { loaderToken?.setPriority(current) }
    }

    /// Sends `event` to the subscribers. A final event goes to each subscriber once, including
    /// those joining meanwhile; then the task closes.
    func broadcast(_ event: ImageManager.Event) {
        guard event.isFinal else {
            let subscribers = state.withLock { $0.phase == .running ? Array($0.subscribers.values) : [] }
            for operation in subscribers { operation.deliver(event) }
            return
        }
        while let batch = state.withLock({ $0.takeFinalBatch() }) {
            for operation in batch { operation.deliver(event) }
        }
        onClose(self)
    }
}

extension ImageLoadTask.State {
    /// The change to pass to the loader when the task's priority moved from `before`.
    func priorityChange(from before: ImagePriority) -> ImageLoadTask.PriorityChange? {
        guard phase == .running, let loaderToken, priority != before else { return nil }
        return ImageLoadTask.PriorityChange(token: loaderToken, priority: priority)
    }
}

extension ImageLoadTask.State.Phase {
    var isClosed: Bool {
        if case .closed = self { return true }
        return false
    }
}
