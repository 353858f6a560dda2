import Foundation
@_spi(WebImageInternals) import WebImageCoders

/// Several caches used as one (SDWebImage 5's `SDImageCachesManager`): queries ask each cache in
/// order and stop at the first hit; stores, removals and clears go to every cache.
public final class ImageCachesManager: ImageCaching {
    private let list: Protected<[any ImageCaching]>

    /// A chain of `caches`, asked in this order.
    public init(caches: [any ImageCaching]) { list = Protected(caches) }

    /// The caches, in query order.
    public var caches: [any ImageCaching] {
        get { list.withLock { $0 } }
        set { list.withLock { $0 = newValue } }
    }

    /// Adds `cache` at the end of the chain.
    public func addCache(_ cache: any ImageCaching) { list.withLock { $0.append(cache) } }

    @discardableResult
    public func queryImage(
        forKey key: String,
        options: ImageOptions,
        context: ImageContext?,
        cacheType: ImageCacheType,
        completion: @escaping @Sendable (ImageCacheQueryResult) -> Void
    ) -> (any ImageCacheOperation)? {
        let chain = ChainOperation()
        let query = Query(key: key, options: options, context: context, cacheType: cacheType, chain: chain) { result in
            guard !chain.isCancelled else { return }
            chain.markAnswered()
            completion(result)
        }
        ask(caches[...], query)
        return chain.isAnswered ? nil : chain
    }

    /// One query passed down the chain.
    private struct Query: Sendable {
        var key: String
        var options: ImageOptions
        var context: ImageContext?
        var cacheType: ImageCacheType
        var chain: ChainOperation
        var completion: @Sendable (ImageCacheQueryResult) -> Void
    }

    /// Asks the first of `remaining`, and on a miss the rest, in order.
    private func ask(_ remaining: ArraySlice<any ImageCaching>, _ query: Query) {
        guard let cache = remaining.first, !query.chain.isCancelled else { return query.completion(.miss) }
        let operation = cache.queryImage(
            forKey: query.key,
            options: query.options,
            context: query.context,
            cacheType: query.cacheType
        ) { [self] result in
            if result.isHit { return query.completion(result) }
            ask(remaining.dropFirst(), query)
        }
        query.chain.setCurrent(operation)
    }

    public func store(
        _ image: DecodedImage?,
        data: Data?,
        forKey key: String,
        metadata: DiskCacheMetadata?,
        cacheType: ImageCacheType,
        completion: (@Sendable ((any Error)?) -> Void)?
    ) {
        let group = FanIn(count: caches.count) { completion?($0) }
        for cache in caches {
            cache.store(image, data: data, forKey: key, metadata: metadata, cacheType: cacheType) { group.arrive($0) }
        }
    }

    public func removeImage(forKey key: String, cacheType: ImageCacheType, completion: (@Sendable () -> Void)?) {
        let group = FanIn(count: caches.count) { _ in completion?() }
        for cache in caches { cache.removeImage(forKey: key, cacheType: cacheType) { group.arrive() } }
    }

    /// The first cache's memory image for `key`, in order.
    public func imageFromMemoryCache(forKey key: String) -> DecodedImage? {
        for cache in caches {
            if let image = cache.imageFromMemoryCache(forKey: key) { return image }
        }
        return nil
    }

    public func containsImage(
        forKey key: String,
        cacheType: ImageCacheType,
        completion: @escaping @Sendable (ImageCacheType) -> Void
    ) {
        contains(caches[...], key: key, cacheType: cacheType, completion: completion)
    }

    private func contains(
        _ remaining: ArraySlice<any ImageCaching>,
        key: String,
        cacheType: ImageCacheType,
        completion: @escaping @Sendable (ImageCacheType) -> Void
    ) {
        guard let cache = remaining.first else { return completion(.none) }
        cache.containsImage(forKey: key, cacheType: cacheType) { [self] found in
            if found != .none { return completion(found) }
            contains(remaining.dropFirst(), key: key, cacheType: cacheType, completion: completion)
        }
    }

    public func flush(completion: @escaping @Sendable () -> Void) {
        let caches = caches
        let group = FanIn(count: caches.count) { _ in completion() }
        for cache in caches { cache.flush { group.arrive() } }
    }

    public func removeExpired(completion: @escaping @Sendable () -> Void) {
        let caches = caches
        let group = FanIn(count: caches.count) { _ in completion() }
        for cache in caches { cache.removeExpired { group.arrive() } }
    }

    public func clear(cacheType: ImageCacheType, completion: (@Sendable () -> Void)?) {
        let group = FanIn(count: caches.count) { _ in completion?() }
        for cache in caches { cache.clear(cacheType: cacheType) { group.arrive() } }
    }
}

/// The chain's handle: cancels whichever cache is being asked.
private final class ChainOperation: ImageCacheOperation {
    private let state = Protected<(current: (any ImageCacheOperation)?, cancelled: Bool, answered: Bool)>(
        (nil, false, false)
    )

    func setCurrent(_ operation: (any ImageCacheOperation)?) {
        let cancelNow = state.withLock { state in
            state.current = operation
            return state.cancelled
        }
        if cancelNow { operation?.cancel() }
    }

    func markAnswered() { state.withLock { $0.answered = true } }
    var isAnswered: Bool { state.withLock { $0.answered } }

    func cancel() {
        let current = state.withLock { state in
            state.cancelled = true
            return state.current
        }
        current?.cancel()
    }

    var isCancelled: Bool { state.withLock { $0.cancelled } }
}

/// Calls `done` once `count` arrivals came in, with the first error among them.
private final class FanIn: Sendable {
    private let state: Protected<(remaining: Int, error: (any Error)?)>
    private let done: @Sendable ((any Error)?) -> Void

    init(count: Int, done: @escaping @Sendable ((any Error)?) -> Void) {
        state = Protected((count, nil))
        self.done = done
        if count == 0 { done(nil) }
    }

    func arrive(_ error: (any Error)? = nil) {
        let finished = state.withLock { state -> (any Error)?? in
            if state.error == nil { state.error = error }
            state.remaining -= 1
            return state.remaining == 0 ? .some(state.error) : .none
        }
        if let finished { done(finished) }
    }
}
