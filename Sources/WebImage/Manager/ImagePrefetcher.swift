import Foundation
@_spi(WebImageInternals) import WebImageCoders

/// Warms the caches with a list of URLs (SDWebImagePrefetcher): at most
/// ``maxConcurrentPrefetchCount`` loads at a time, low priority by default. Cached URLs count as
/// finished without touching the network.
public final class ImagePrefetcher: Sendable {
    /// Counts for one prefetch.
    public struct Progress: Sendable, Hashable {
        /// URLs done, however they ended.
        public var finished = 0
        /// URLs that failed (SDWebImagePrefetcher calls them "skipped").
        public var failed = 0
        /// SDWebImagePrefetcher's name for ``failed``; `webimage prefetch` says "skipped" for
        /// URLs already cached, so the library says "failed".
        @available(*, deprecated, renamed: "failed")
        public var skipped: Int {
            get { failed }
            set { failed = newValue }
        }
        /// URLs that were already cached (a subset of `finished`).
        public var cached = 0
        /// URLs asked for.
        public var total = 0
    }

    /// One URL that failed: its place in the list and why (a failed disk write included).
    public struct Failure: Sendable {
        /// The URL's index in the prefetched list.
        public var index: Int
        /// The URL (`nil` when the list held `nil`).
        public var url: URL?
        /// What went wrong.
        public var error: WebImageError
    }

    /// The prefetcher over ``ImageManager/shared``.
    public static let shared = ImagePrefetcher(manager: .shared)

    /// The manager loads go through.
    public let manager: ImageManager
    private struct Settings {
        var maxConcurrent = 3
        var options: ImageOptions = [.lowPriority]
        var context: ImageContext?
    }

    private let settings = Protected(Settings())
    private let tokens = Protected<Set<ImagePrefetchToken>>([])
    private let delegateReference = Protected(WeakDelegate())

    private struct WeakDelegate {
        weak var delegate: (any ImagePrefetcherDelegate)?
    }

    /// Told of each URL as it ends and of each prefetch's end (SDWebImagePrefetcherDelegate);
    /// held weakly. Called on the loads' threads, never with one of the prefetcher's locks held.
    public var delegate: (any ImagePrefetcherDelegate)? {
        get { delegateReference.withLock { $0.delegate } }
        set { delegateReference.withLock { $0.delegate = newValue } }
    }

    /// A prefetcher loading through `manager`.
    public init(manager: ImageManager) { self.manager = manager }

    /// Loads running at once per prefetch. Default 3.
    public var maxConcurrentPrefetchCount: Int {
        get { settings.withLock { $0.maxConcurrent } }
        set { settings.withLock { $0.maxConcurrent = max(1, newValue) } }
    }

    /// Options for prefetches that do not pass their own. Default `[.lowPriority]`. Every prefetch
    /// also waits for its disk writes (``ImageOptions/waitStoreCache``), so "finished" means
    /// stored and a failed write counts as a failure.
    public var options: ImageOptions {
        get { settings.withLock { $0.options } }
        set { settings.withLock { $0.options = newValue } }
    }

    /// Context for prefetches that do not pass their own.
    public var context: ImageContext? {
        get { settings.withLock { $0.context } }
        set { settings.withLock { $0.context = newValue } }
    }

    /// Prefetches `urls` (SDWebImagePrefetcher `prefetchURLs:progress:completed:`).
    /// `progress(finished, total)` runs after each URL; `completed(finished,
    /// failed)` runs once at the end, or when the token is cancelled (with the counts so far).
    @discardableResult
    public func prefetchURLs(
        _ urls: [URL?],
        options: ImageOptions? = nil,
        context: ImageContext? = nil,
        progress: (@Sendable (Int, Int) -> Void)? = nil,
        completed: (@Sendable (Int, Int) -> Void)? = nil
    ) -> ImagePrefetchToken {
        let settings = settings.withLock { $0 }
        let urlEnded: @Sendable (URL?, Progress) -> Void = { [weak self] url, counts in
            progress?(counts.finished, counts.total)
            guard let self, let delegate else { return }
            delegate.imagePrefetcher(
                self,
                didPrefetchURL: url,
                finishedCount: counts.finished,
                totalCount: counts.total
            )
        }
        let token = ImagePrefetchToken(
            urls: urls,
            manager: manager,
            options: (options ?? settings.options).union(.waitStoreCache),
            context: context ?? settings.context,
            maxConcurrent: settings.maxConcurrent,
            progress: urlEnded
        ) { [weak self] token, counts in
            _ = self?.tokens.withLock { $0.remove(token) }
            completed?(counts.finished, counts.failed)
            guard let self, let delegate else { return }
            delegate.imagePrefetcher(self, didFinishWithTotalCount: counts.total, skippedCount: counts.failed)
        }
        tokens.withLock { _ = $0.insert(token) }
        token.begin()
        return token
    }

    /// Prefetches `urls` and returns the counts; cancelling the Swift task cancels the prefetch.
    public func prefetch(
        _ urls: [URL?],
        options: ImageOptions? = nil,
        context: ImageContext? = nil
    ) async
        -> Progress
    {
        await withCancellableCallback { continuation in
            let token = prefetchURLs(urls, options: options, context: context)
            token.onEnd { continuation.resume(returning: $0) }
            return token
        } cancel: { token in
            token.cancel()
        }
    }

    /// Cancels every prefetch.
    public func cancelPrefetching() {
        for token in tokens.withLock({ Array($0) }) { token.cancel() }
    }
}

/// One running prefetch; cancel it to stop its remaining loads.
public final class ImagePrefetchToken: Sendable, Hashable {
    private struct State {
        var next = 0
        var running: [Int: ImageLoadOperation] = [:]
        /// URLs counted already (`refreshCached` may finish a load twice).
        var done: Set<Int> = []
        var counts = ImagePrefetcher.Progress()
        var failures: [ImagePrefetcher.Failure] = []
        var ended = false
        var endHandlers: [@Sendable (ImagePrefetcher.Progress) -> Void] = []
    }

    private let urls: [URL?]
    private let manager: ImageManager
    private let options: ImageOptions
    private let context: ImageContext?
    private let maxConcurrent: Int
    /// After each URL ends: the URL and the counts then.
    private let progress: @Sendable (URL?, ImagePrefetcher.Progress) -> Void
    private let completion: @Sendable (ImagePrefetchToken, ImagePrefetcher.Progress) -> Void
    private let state: Protected<State>

    init(
        urls: [URL?],
        manager: ImageManager,
        options: ImageOptions,
        context: ImageContext?,
        maxConcurrent: Int,
        progress: @escaping @Sendable (URL?, ImagePrefetcher.Progress) -> Void,
        completion: @escaping @Sendable (ImagePrefetchToken, ImagePrefetcher.Progress) -> Void
    ) {
        self.urls = urls
        self.manager = manager
        self.options = options
        self.context = context
        self.maxConcurrent = maxConcurrent
        self.progress = progress
        self.completion = completion
        state = Protected(State(counts: ImagePrefetcher.Progress(total: urls.count)))
    }

    /// The counts so far.
    public var counts: ImagePrefetcher.Progress { state.withLock { $0.counts } }

    /// The URLs that failed so far, in the order they ended, with their errors.
    public var failures: [ImagePrefetcher.Failure] { state.withLock { $0.failures } }

    func begin() {
        if urls.isEmpty { return end() }
        for _ in 0..<min(maxConcurrent, urls.count) { startNext() }
    }

    /// Runs `handler` with the final counts when the prefetch ends (at once if it already did).
    public func onEnd(_ handler: @escaping @Sendable (ImagePrefetcher.Progress) -> Void) {
        let ended = state.withLock { state -> ImagePrefetcher.Progress? in
            if state.ended { return state.counts }
            state.endHandlers.append(handler)
            return nil
        }
        if let ended { handler(ended) }
    }

    private func startNext() {
        let index = state.withLock { state -> Int? in
            while state.next < urls.count && state.done.contains(state.next) { state.next += 1 }  // cancelled
            guard !state.ended, state.next < urls.count else { return nil }
            defer { state.next += 1 }
            return state.next
        }
        guard let index else { return }
        let operation = manager.loadImage(with: urls[index], options: options, context: context) {
            [self] _, _, error, cacheType, finished, _ in
            guard finished else { return }
            let counts = state.withLock { state -> ImagePrefetcher.Progress? in
                guard !state.ended, state.done.insert(index).inserted else { return nil }
                state.running[index] = nil
                state.counts.finished += 1
                if let error {
                    state.counts.failed += 1
                    state.failures.append(ImagePrefetcher.Failure(index: index, url: urls[index], error: error))
                }
                if error == nil && cacheType != .none { state.counts.cached += 1 }
                return state.counts
            }
            guard let counts else { return }
            progress(urls[index], counts)
            if counts.finished == counts.total { end() } else { startNext() }
        }
        state.withLock { state in
            if !state.ended, !state.done.contains(index) { state.running[index] = operation }
        }
    }

    /// Stops the remaining loads; `completed` gets the counts so far.
    public func cancel() {
        let running = state.withLock { state -> [ImageLoadOperation] in
            guard !state.ended else { return [] }
            return Array(state.running.values)
        }
        end()
        for operation in running { operation.cancel() }
    }

    /// Stops prefetching `url`, at every place it has in the list (Nuke's
    /// `stopPrefetching(with:)`): a running load is cancelled and a waiting one never starts; each
    /// counts as finished and failed with ``WebImageError/Code/cancelled``, and the rest go on.
    public func cancel(_ url: URL) {
        let (operations, ended) = state.withLock {
            state -> ([ImageLoadOperation], [ImagePrefetcher.Progress]) in
            guard !state.ended else { return ([], []) }
            var operations: [ImageLoadOperation] = []
            var ended: [ImagePrefetcher.Progress] = []
            for index in urls.indices where urls[index] == url && state.done.insert(index).inserted {
                if let operation = state.running.removeValue(forKey: index) { operations.append(operation) }
                state.counts.finished += 1
                state.counts.failed += 1
                state.failures.append(ImagePrefetcher.Failure(index: index, url: url, error: .cancelled(url)))
                ended.append(state.counts)
            }
            return (operations, ended)
        }
        for operation in operations { operation.cancel() }
        for counts in ended { progress(url, counts) }
        guard let last = ended.last else { return }
        if last.finished == last.total { return end() }
        for _ in operations { startNext() }  // their places go to the URLs waiting
    }

    private func end() {
        let finished = state.withLock {
            state -> (ImagePrefetcher.Progress, [@Sendable (ImagePrefetcher.Progress) -> Void])? in
            guard !state.ended else { return nil }
            state.ended = true
            state.running.removeAll()
            defer { state.endHandlers.removeAll() }
            return (state.counts, state.endHandlers)
        }
        guard let (counts, handlers) = finished else { return }
        completion(self, counts)
        for handler in handlers { handler(counts) }
    }

    public static func == (lhs: ImagePrefetchToken, rhs: ImagePrefetchToken) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

/// What an ``ImagePrefetcher`` tells its ``ImagePrefetcher/delegate``
/// (SDWebImagePrefetcherDelegate); both methods have empty defaults. Called on the loads'
/// threads, never with one of the prefetcher's locks held.
public protocol ImagePrefetcherDelegate: AnyObject, Sendable {
    /// `url` ended (loaded, found in the cache, failed or cancelled): `finishedCount` of the
    /// prefetch's `totalCount` URLs are done.
    func imagePrefetcher(_ prefetcher: ImagePrefetcher, didPrefetchURL url: URL?, finishedCount: Int, totalCount: Int)
    /// A prefetch ended, every URL done or the prefetch cancelled; `skippedCount` failed.
    func imagePrefetcher(_ prefetcher: ImagePrefetcher, didFinishWithTotalCount totalCount: Int, skippedCount: Int)
}

extension ImagePrefetcherDelegate {
    public func imagePrefetcher(
        _ prefetcher: ImagePrefetcher,
        didPrefetchURL url: URL?,
        finishedCount: Int,
        totalCount: Int
    ) {}
    public func imagePrefetcher(
        _ prefetcher: ImagePrefetcher,
        didFinishWithTotalCount totalCount: Int,
        skippedCount: Int
    ) {}
}
