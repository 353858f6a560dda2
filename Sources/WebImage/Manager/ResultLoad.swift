import Foundation
@_spi(WebImageInternals) import WebImageCoders

/// The manager's stage for one result (an image under one ``ImageCacheKey``): the cache query,
/// the loader's fetch and decode, the transform and the store run once for every caller whose
/// load has the same ``Key``, and each event goes to every subscriber (an
/// ``ImageLoadOperation``). Below it, the downloader shares one request among loads of one URL
/// and one decode among callers that want the same decode; this is the only layer that shares
/// transformed results.
///
/// The load is joinable until its final event goes out (a caller arriving later did not ask
/// before the result was in: it starts a new load, whose cache query finds what this one
/// stored); it closes and leaves the pool once every subscriber had the event. When
/// its last subscriber cancels first, the load is abandoned: its cache query and its loader
/// interest are cancelled and its remaining stages skip their work.
///
/// The stages (``run()`` and what follows it in `ResultLoad+Stages.swift`) are methods: they
/// read the load's ``Inputs`` and the manager's services from the load instead of passing them
/// along.
///
/// Thread-safe: subscribers are called outside the load's lock.
final class ResultLoad: Sendable {
    /// What one load is asked for, fixed when it starts (by ``ImageManager``'s preflight, which
    /// resolves the loader and the cache key once). A class: the preflight, the load and its
    /// stages all hold it, and a copy of its fields (the manager's hooks, the context) retained
    /// a dozen references each time.
    final class Inputs: Sendable {
        let url: URL
        /// The result's key; ``originalKey`` is its original's.
        let cacheKey: ImageCacheKey
        /// The loader that can load ``url``.
        let loader: any ImageLoading
        let options: ImageOptions
        /// Filled with the manager's queues and budget.
        let context: ImageContext
        /// The manager's settings when the load started.
        let configuration: ImageManager.Configuration

        init(
            url: URL,
            cacheKey: ImageCacheKey,
            loader: any ImageLoading,
            options: ImageOptions,
            context: ImageContext,
            configuration: ImageManager.Configuration
        ) {
            self.url = url
            self.cacheKey = cacheKey
            self.loader = loader
            self.options = options
            self.context = context
            self.configuration = configuration
        }

        /// The key the original's bytes are stored under (the URL's own key, or the filter's).
        var originalKey: String { cacheKey.original.rawValue }
    }

    let key: Key
    let inputs: Inputs
    /// The caches, loaders and failed-URL list the stages use. The task holds its manager until
    /// it closes (the manager drops the task then).
    let manager: ImageManager
    private let state = Protected(State())
    private let onClose: @Sendable (ResultLoad) -> Void

    /// A task loading `inputs` with `manager`'s services. `onClose` runs once, when the task
    /// closed (delivered or abandoned): the pool lets go of it.
    init(
        key: Key,
        inputs: Inputs,
        manager: ImageManager,
        onClose: @escaping @Sendable (ResultLoad) -> Void
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
            /// The final event is going out to the subscribers that came before; a caller
            /// arriving now starts a new task (the result was in before it asked: for
            /// `fromLoaderOnly` not the network's answer to it, for a cached load not the cache's
            /// answer of now).
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

        /// Adds a subscriber at `priority`; `nil` once the final event goes out (start a new task).
        mutating func subscribe(_ operation: ImageLoadOperation, priority: ImagePriority = .normal) -> UInt64? {
            guard phase == .running else { return nil }
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
            return subscribers.sorted { $0.key < $1.key }.map { $0.value }
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

extension ResultLoad.State {
    /// The change to pass to the loader when the task's priority moved from `before`.
    func priorityChange(from before: ImagePriority) -> ResultLoad.PriorityChange? {
        guard phase == .running, let loaderToken, priority != before else { return nil }
        return ResultLoad.PriorityChange(token: loaderToken, priority: priority)
    }
}

extension ResultLoad.State.Phase {
    var isClosed: Bool {
        if case .closed = self { return true }
        return false
    }
}

extension ResultLoad {
    /// What makes two ``ImageManager`` loads one result load: loads whose keys are equal share the
    /// cache query, the loader's load, the transform and the store, so everything that changes any
    /// of them is in the key. Loads that differ only in priority share (the load keeps the first
    /// caller's priority); `refreshCached` loads and loads with a request modifier never share.
    struct Key: Hashable, Sendable {
        /// The cache key (filter or URL, thumbnail, transformers) and the URL asked for, which a
        /// cache key filter may have shortened.
        var cacheKey: ImageCacheKey
        var url: String
        /// The options, without the priorities.
        var options: ImageOptions
        var scaleDownLimitBytes: Int
        var storeCacheType: ImageCacheType
        /// The context's coders, budget and queues, when not the shared ones.
        var coders: ObjectIdentifier?
        var budget: ObjectIdentifier?
        var decodeQueue: ObjectIdentifier?
        var transformQueue: ObjectIdentifier?
        /// A cached copy the caller passed in (its validators and bytes change the request).
        var cachedResponse: ImageContext.CachedResponse?
        /// Set for loads no other load may join: a number no other load gets.
        var unshareable: UInt64?

        /// The key of a load of `url` under `cacheKey`; `unshareable` is a number no other load
        /// gets, used for `refreshCached` and for a context with a request modifier.
        init(cacheKey: ImageCacheKey, url: URL, options: ImageOptions, context: ImageContext, unshareable: UInt64) {
            self.cacheKey = cacheKey
            self.url = url.absoluteString
            self.options = options.subtracting([.lowPriority, .highPriority])
            scaleDownLimitBytes = context.scaleDownLimitBytes
            storeCacheType = context.storeCacheType
            coders = context.coders.map(ObjectIdentifier.init)
            budget = context.decodingMemoryBudget.map(ObjectIdentifier.init)
            decodeQueue = context.decodeQueue.map(ObjectIdentifier.init)
            transformQueue = context.transformQueue.map(ObjectIdentifier.init)
            cachedResponse = context.cachedResponse
            let shareable = !context.changesItsDownload && !options.contains(.refreshCached)
            self.unshareable = shareable ? nil : unshareable
        }

        /// The URL and the unshareable number only: loads of one URL seldom differ in the rest,
        /// which equality still compares. (Every field hashed about 20 strings a load: the URL
        /// twice, the colour policy's name, the transformers' keys.)
        func hash(into hasher: inout Hasher) {
            hasher.combine(url)
            hasher.combine(unshareable)
        }
    }
}
