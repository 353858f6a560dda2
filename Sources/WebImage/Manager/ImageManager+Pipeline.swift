import Foundation
import Synchronization
@_spi(WebImageInternals) import WebImageCoders
import WebImageHTTP

/// The load pipeline behind ``ImageManager``'s entry points: a caller's checks and memory hit
/// (``preflight(url:options:context:)``), then the key's ``ResultLoad``, which runs the stages.
extension ImageManager {
    /// What the pipeline reports, the one shape every public API adapts; `final` events end the
    /// load.
    enum Event: Sendable {
        case progress(Int64, Int64, URL)
        case partial(DecodedImage, URL?)
        /// The first bytes told the image's format, size and frame count.
        case info(ImageHeader, URL)
        /// An image; `final == false` for the cached image `refreshCached` delivers first.
        case image(ImageLoadResult, final: Bool)
        case failure(WebImageError, URL?)
        /// `refreshCached` revalidated the cached image (already delivered): nothing new.
        case notModified(ImageLoadResult)
        /// `refreshCached`'s revalidation failed after the cached image was delivered: the cached
        /// image stands (the async and task APIs return it), and the error says why.
        case refreshFailed(ImageLoadResult, WebImageError)

        var isFinal: Bool {
            switch self {
            case .progress, .partial, .info: false
            case .image(_, let final): final
            case .failure, .notModified, .refreshFailed: true
            }
        }
    }

    /// A caller's checks before any task: the answer when there is one at once (a bad URL, a
    /// remembered failure, a memory hit), else the load's inputs.
    enum Preflight: Sendable {
        case answered(Event)
        case load(ResultLoad.Inputs)

        /// A result known at once: a memory hit's image or the refusal.
        var immediate: Result<ImageLoadResult, WebImageError>? {
            switch self {
            case .answered(.image(let result, _)): .success(result)
            case .answered(.failure(let error, _)): .failure(error)
            default: nil
            }
        }
    }

    /// The checks every load makes once, in order: the URL has a loader, it is not a remembered
    /// failure (unless `retryFailed`), and its image is not in memory (unless the options want
    /// the loader, the bytes too, or a revalidation). `context` is filled with the manager's
    /// queues and budget.
    func preflight(url: URL?, options: ImageOptions, context: ImageContext) -> Preflight {
        guard let url, let loader = loader(for: url) else {
            let reason = url?.isFileURL == true ? nil : url?.httpValidationFailure
            return .answered(.failure(.invalidURL(url?.absoluteString ?? "", reason: reason), url))
        }
        if !options.contains(.retryFailed), let failure = failed.failure(of: url) {
            return .answered(.failure(Self.blackListed(failure), url))
        }
        let settings = configuration
        let context = settings.filling(context)
        let options = options.framesOnDemandResolved(
            transforms: context.transformer != nil || settings.transformsDownloads
        )
        let cacheKey = imageCacheKey(for: url, context: context, settings: settings)
        let checksMemory = options.isDisjoint(with: [.fromLoaderOnly, .refreshCached, .queryMemoryData])
        if checksMemory, let image = imageCache.imageFromMemoryCache(forKey: cacheKey.rawValue), image.serves(options) {
            return .answered(
                .image(ImageLoadResult(image: image, data: nil, cacheType: .memory, url: url), final: true)
            )
        }
        return .load(
            ResultLoad.Inputs(
                url: url,
                cacheKey: cacheKey,
                loader: loader,
                options: options,
                context: context,
                configuration: settings
            )
        )
    }

    /// Starts a load: its ``preflight(url:options:context:)``, then a subscription to the key's
    /// task (a new one when none is open).
    func start(
        url: URL?,
        options: ImageOptions,
        context: ImageContext,
        sink: @escaping @Sendable (Event) -> Void
    ) -> ImageLoadOperation {
        start(preflight(url: url, options: options, context: context), url: url, sink: sink)
    }

    /// Starts a load whose preflight the caller made.
    func start(_ preflight: Preflight, url: URL?, sink: @escaping @Sendable (Event) -> Void) -> ImageLoadOperation {
        let inputs: ResultLoad.Inputs? = if case .load(let inputs) = preflight { inputs } else { nil }
        let priority = inputs.map { $0.context.priority ?? ImagePriority($0.options) } ?? .normal
        let callbackQueue = if let inputs { inputs.configuration.callbackQueue } else { configuration.callbackQueue }
        let operation = ImageLoadOperation(
            url: url,
            priority: priority,
            callbackQueue: callbackQueue,
            sink: sink
        ) {
            [weak self] operation in self?.running.withLock { _ = $0.remove(operation) }
        }
        running.withLock { _ = $0.insert(operation) }
        switch preflight {
        case .answered(let event):
            // A memory hit completes at once, on the caller's thread (SDWebImage's behaviour).
            operation.deliver(event)
        case .load(let inputs):
            subscribe(operation, to: inputs, priority: priority)
        }
        return operation
    }

    /// Subscribes `operation` to the open task for `inputs`' key, or to a new one it starts:
    /// one cache query, one load and one store for every caller.
    private func subscribe(_ operation: ImageLoadOperation, to inputs: ResultLoad.Inputs, priority: ImagePriority) {
        let loadKey = ResultLoad.Key(
            cacheKey: inputs.cacheKey,
            url: inputs.url,
            options: inputs.options,
            context: inputs.context,
            unshareable: loadNumbers.add(1, ordering: .relaxed).newValue
        )
        let (task, subscription, isNew) = tasks.withLock {
            tasks -> (ResultLoad, (id: UInt64, change: ResultLoad.PriorityChange?), Bool) in
            if let existing = tasks[loadKey], let subscription = existing.subscribe(operation, priority: priority) {
                return (existing, subscription, false)
            }
            let task = ResultLoad(key: loadKey, inputs: inputs, manager: self) { [weak self] task in
                self?.tasks.withLock { tasks in
                    if tasks[task.key] === task { tasks[task.key] = nil }
                }
            }
            let subscription = task.subscribe(operation, priority: priority) ?? (0, nil)  // a new task is open
            tasks[loadKey] = task
            return (task, subscription, true)
        }
        subscription.change?.apply()
        if !operation.attach(to: task, subscription: subscription.id) { task.unsubscribe(subscription.id) }
        if isNew { task.run() }
    }
}
