import Foundation
import Logging
import Synchronization
import WebImageHTTP

/// HTTP's caching rules for cache hits (RFC 9111): a fresh entry is used as it is, a stale one
/// is revalidated first (or, within `stale-while-revalidate`, used at once and revalidated in
/// the background), and a `304` refreshes the stored headers.
extension ImageManager {
    /// A cached copy a load found, and whether its callers already have it.
    struct CachedCopy: Sendable {
        var result: ImageLoadResult
        var metadata: DiskCacheMetadata?
        /// `refreshCached` delivered it first (or it went out before a background revalidation).
        var delivered: Bool

        /// The event that ends a load that settles on this copy: `notModified` when the callers
        /// have it already, else the copy itself.
        var settled: Event { delivered ? .notModified(result) : .image(result, final: true) }
    }

    /// What a load does with a cache hit.
    enum CachedUse: Equatable {
        /// Deliver it; no request.
        case serve
        /// `refreshCached`: deliver it, then revalidate and deliver a changed image.
        case serveThenRefresh
        /// Deliver it, and revalidate in the background (`stale-while-revalidate`).
        case serveAndRevalidateInBackground
        /// Revalidate, then deliver it or the changed image.
        case revalidate
    }

    /// The use of `cached` at `now`. Memory hits follow the memory entry's own expiry, and entries
    /// that did not come from HTTP stay usable until the disk cache's `maxAge`; `fromCacheOnly`
    /// uses any hit. `refreshCached` always revalidates, except a fresh `immutable` entry.
    static func use(of cached: ImageCacheQueryResult, options: ImageOptions, now: Date) -> CachedUse {
        if options.contains(.fromCacheOnly) { return .serve }
        let freshness = cached.metadata?.freshness
        if options.contains(.refreshCached) {
            let immutable = freshness.map { $0.immutable && $0.use(at: now) == .fresh } ?? false
            return immutable ? .serve : .serveThenRefresh
        }
        guard cached.cacheType == .disk, let freshness else { return .serve }
        switch freshness.use(at: now) {
        case .fresh: return .serve
        case .staleWhileRevalidating: return .serveAndRevalidateInBackground
        case .stale: return .revalidate
        }
    }

    /// After a `304`: the stored copy's headers as the `304` updated them, written back with its
    /// bytes (and to memory, so the refreshed freshness applies there too).
    func refreshStoredCopy(_ cached: CachedCopy, key: String, context: ImageContext, notModified: DiskCacheMetadata?) {
        guard let stored = cached.metadata, let data = cached.result.data, let notModified else { return }
        let refreshed = stored.updated(by: notModified)
        if let image = cached.result.image, context.storeCacheType.includesMemory {
            imageCache.store(image, data: nil, forKey: key, metadata: refreshed, cacheType: .memory, completion: nil)
        }
        if context.storeCacheType.includesDisk {
            imageCache.store(nil, data: data, forKey: key, metadata: refreshed, cacheType: .disk, completion: nil)
        }
    }

    /// Whether a stale copy stands in for a revalidation that failed with `error`: when the
    /// origin could not be reached, or answered 5xx within `stale-if-error`; never when its
    /// headers forbid it (RFC 9111 §4.2.4).
    func servesStale(_ cached: CachedCopy, after error: WebImageError) -> Bool {
        guard let freshness = cached.metadata?.freshness else { return false }
        let disconnected = error.code == .networkError && error.underlying?.code != .cancelled
        let serverError = error.code == .invalidDownloadStatusCode && (error.statusCode ?? 0) >= 500
        guard disconnected || serverError else { return false }
        return freshness.mayServeStale(afterFailureAt: Date(), disconnected: disconnected)
    }

    /// Revalidates `key`'s stale entry with no caller waiting: one request per key at a time,
    /// whose answer (a `304`'s headers or a changed image) is stored for the next load.
    func revalidateInBackground(url: URL, key: String, options: ImageOptions, context: ImageContext, cached: CachedCopy)
    {
        guard revalidating.withLock({ $0.insert(key).inserted }) else { return }
        let loadKey = ImageLoadKey(
            cacheKey: imageCacheKey(for: url, context: context),
            url: url,
            options: options,
            context: context,
            unshareable: loadNumbers.add(1, ordering: .relaxed).newValue
        )
        let task = ImageLoadTask(key: loadKey) { [weak self] _ in
            self?.revalidating.withLock { _ = $0.remove(key) }
        }
        configuration.logger.debug("revalidating in the background", metadata: ["url": "\(url)"])
        download(url: url, key: key, options: options, context: context, cached: cached, task: task) {
            event in task.broadcast(event)
        }
    }
}
