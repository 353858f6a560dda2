import Foundation
import Logging
import Synchronization
import WebImageCoders
import WebImageHTTP

/// The load pipeline behind ``ImageManager``'s entry points: a caller's checks and memory hit,
/// then the key's ``ImageLoadTask`` and its stages.
extension ImageManager {
    /// What the pipeline reports; `final` events end the load.
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

        var isFinal: Bool {
            switch self {
            case .progress, .partial, .info: false
            case .image(_, let final): final
            case .failure, .notModified: true
            }
        }
    }

    func start(
        url: URL?,
        options: ImageOptions,
        context: ImageContext,
        sink: @escaping @Sendable (Event) -> Void
    ) -> ImageLoadOperation {
        let context = configuration.filling(context)
        let priority = context.priority ?? ImagePriority(options)
        let operation = ImageLoadOperation(
            url: url,
            priority: priority,
            callbackQueue: configuration.callbackQueue,
            sink: sink
        ) {
            [weak self] operation in self?.running.withLock { _ = $0.remove(operation) }
        }
        running.withLock { _ = $0.insert(operation) }

        guard let url, loader(for: url) != nil else {
            let reason = url?.isFileURL == true ? nil : url?.httpValidationFailure
            operation.deliver(.failure(.invalidURL(url?.absoluteString ?? "", reason: reason), url))
            return operation
        }
        if !options.contains(.retryFailed), let failure = failed.failure(of: url) {
            operation.deliver(.failure(Self.blackListed(failure), url))
            return operation
        }
        let typedKey = imageCacheKey(for: url, context: context)
        let key = typedKey.rawValue
        // A memory hit completes at once, on the caller's thread (SDWebImage's behaviour).
        if options.isDisjoint(with: [.fromLoaderOnly, .refreshCached, .queryMemoryData]),
            let image = imageCache.imageFromMemoryCache(forKey: key)
        {
            let hit = ImageLoadResult(image: image, data: nil, cacheType: .memory, url: url)
            operation.deliver(.image(hit, final: true))
            return operation
        }
        // Find or start the key's task: one cache query, one load and one store for every caller.
        let loadKey = ImageLoadKey(
            cacheKey: typedKey,
            url: url,
            options: options,
            context: context,
            unshareable: loadNumbers.add(1, ordering: .relaxed).newValue
        )
        let (task, subscription, isNew) = tasks.withLock {
            tasks -> (ImageLoadTask, (id: UInt64, change: ImageLoadTask.PriorityChange?), Bool) in
            if let existing = tasks[loadKey], let subscription = existing.subscribe(operation, priority: priority) {
                return (existing, subscription, false)
            }
            let task = ImageLoadTask(key: loadKey) { [weak self] task in
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
        if isNew { run(task, url: url, key: key, options: options, context: context) }
        return operation
    }

    /// Runs a new task's stages: memory and disk, the original on disk for a derived image, the
    /// loader, then transform and store (``finishDownload``).
    private func run(_ task: ImageLoadTask, url: URL, key: String, options: ImageOptions, context: ImageContext) {
        let deliver: @Sendable (Event) -> Void = { event in task.broadcast(event) }
        let downloadMissing: @Sendable () -> Void = { [self] in
            download(
                url: url,
                key: key,
                options: options,
                context: context,
                cached: nil,
                task: task,
                deliver: deliver
            )
        }
        if options.contains(.fromLoaderOnly) { return downloadMissing() }
        var queryOptions = options
        if options.contains(.refreshCached) { queryOptions.insert(.queryMemoryData) }
        let query = imageCache.queryImage(forKey: key, options: queryOptions, context: context, cacheType: .all) {
            [self] cached in
            guard !task.isCancelled else { return }
            guard cached.isHit else {
                guard Self.mayUseStoredOriginal(url, options: options, context: context) else {
                    return downloadMissing()
                }
                return loadFromStoredOriginal(
                    url: url,
                    key: key,
                    options: options,
                    context: context,
                    task: task,
                    deliver: deliver,
                    otherwise: downloadMissing
                )
            }
            let result = ImageLoadResult(image: cached.image, data: cached.data, cacheType: cached.cacheType, url: url)
            let copy = { (delivered: Bool) in
                CachedCopy(result: result, metadata: cached.metadata, delivered: delivered)
            }
            switch Self.use(of: cached, options: options, now: Date()) {
            case .serve:
                deliver(.image(result, final: true))
            case .serveThenRefresh:
                deliver(.image(result, final: false))
                download(
                    url: url,
                    key: key,
                    options: options,
                    context: context,
                    cached: copy(true),
                    task: task,
                    deliver: deliver
                )
            case .serveAndRevalidateInBackground:
                deliver(.image(result, final: true))
                revalidateInBackground(url: url, key: key, options: options, context: context, cached: copy(true))
            case .revalidate:
                download(
                    url: url,
                    key: key,
                    options: options,
                    context: context,
                    cached: copy(false),
                    task: task,
                    deliver: deliver
                )
            }
        }
        task.attach(cacheOperation: query)
    }

    /// Loads `url` from its loader; with `cached`, revalidates that copy (a conditional request
    /// when it has validators) and settles on it when the origin says it has not changed.
    // shape: issue 33 splits this (named in its notes: the load task owning its stages, or a long function doing several jobs)
    func download(
        url: URL,
        key: String,
        options: ImageOptions,
        context: ImageContext,
        cached: CachedCopy?,
        task: ImageLoadTask,
        deliver: @escaping @Sendable (Event) -> Void
    ) {
        let allowed = !options.contains(.fromCacheOnly) && configuration.shouldDownload(url, manager: self)
        guard allowed else {
            if let cached {
                deliver(cached.settled)
            } else {
                deliver(
                    .failure(
                        WebImageError(
                            .cacheMiss,
                            url: url,
                            message: "\(url): not cached, and the network is not allowed"
                        ),
                        url
                    )
                )
            }
            return
        }
        guard let loader = loader(for: url) else {
            deliver(.failure(.invalidURL(url.absoluteString, reason: nil), url))
            return
        }
        var (loaderOptions, downloadContext) = Self.loaderRequest(options, context, cached: cached, deliver: deliver)
        let handle: ImageLoaderCompletion = { [self] image, data, error, finished, metadata in
            guard finished else {
                if let image { deliver(.partial(image, url)) }
                return
            }
            if let error {
                if error.code == .cacheNotModified, let cached {
                    refreshStoredCopy(cached, key: key, context: context, notModified: metadata)
                    deliver(cached.settled)
                    return
                }
                if let cached, !cached.delivered, servesStale(cached, after: error) {
                    configuration.logger.notice(
                        "stale image served: revalidation failed",
                        metadata: ["url": "\(url)", "error": "\(error.code.rawValue)"]
                    )
                    deliver(cached.settled)
                    return
                }
                if configuration.shouldBlock(url, error: error, loader: loader, manager: self) {
                    failed.insert(url, error: error)
                    configuration.logger.notice(
                        "URL blacklisted",
                        metadata: ["url": "\(url)", "error": "\(error.code.rawValue)"]
                    )
                }
                deliver(.failure(error, url))
                return
            }
            finishDownload(
                url: url,
                key: key,
                image: image,
                data: data,
                metadata: metadata ?? DiskCacheMetadata(),
                options: options,
                context: context,
                isCancelled: { task.isCancelled },
                deliver: deliver
            )
        }
        let requestedPriority = task.priority
        downloadContext.priority = requestedPriority
        let token = loader.requestImage(
            with: url,
            options: loaderOptions,
            context: downloadContext,
            progress: { received, expected, url in deliver(.progress(received, expected, url)) },
            completed: handle
        )
        task.attach(loaderToken: token, requestedPriority: requestedPriority)
    }

    /// What the loader is asked with: with a cached copy, its validators (a conditional
    /// request); the early image facts go to the caller's handler and to the load's events.
    private static func loaderRequest(
        _ options: ImageOptions,
        _ context: ImageContext,
        cached: CachedCopy?,
        deliver: @escaping @Sendable (Event) -> Void
    ) -> (ImageOptions, ImageContext) {
        var loaderOptions = options
        var loaderContext = context
        if let cached {
            loaderContext.cachedResponse = ImageContext.CachedResponse(
                etag: cached.metadata?.etag,
                lastModified: cached.metadata?.lastModified,
                data: cached.result.data
            )
            loaderOptions.insert(.refreshCached)  // the loader sends the validators
        }
        let callerInfo = context.imageInfoHandler
        loaderContext.imageInfoHandler = { header, url in
            callerInfo?(header, url)
            deliver(.info(header, url))
        }
        return (loaderOptions, loaderContext)
    }
}
