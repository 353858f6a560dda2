import Foundation
import Logging
import Synchronization
@_spi(WebImageInternals) import WebImageCoders
import WebImageHTTP

/// HTTP's caching rules for cache hits (RFC 9111): a fresh entry is used as it is, a stale one
/// is revalidated first (or, within `stale-while-revalidate`, used at once and revalidated in
/// the background), and a `304` refreshes the stored headers.
extension ResultLoad {
    /// A cached copy a load found, and whether its callers already have it.
    struct CachedCopy: Sendable {
        var result: ImageLoadResult
        var metadata: DiskCacheMetadata?
        /// `refreshCached` delivered it first (or it went out before a background revalidation).
        var delivered: Bool

        /// The event that ends a load that settles on this copy: `notModified` when the callers
        /// have it already, else the copy itself.
        var settled: ImageManager.Event { delivered ? .notModified(result) : .image(result, final: true) }
    }

    /// After a `304`: the stored copy's headers as the `304` updated them, written back with its
    /// bytes (and to memory, so the refreshed freshness applies there too).
    func refreshStoredCopy(_ cached: CachedCopy, notModified: DiskCacheMetadata?) {
        guard let stored = cached.metadata, let data = cached.result.data, let notModified else { return }
        let refreshed = stored.updated(by: notModified)
        let storeType = inputs.context.storeCacheType
        if let image = cached.result.image, storeType.includesMemory {
            manager.imageCache.store(
                image,
                data: nil,
                forKey: inputs.cacheKey.rawValue,
                metadata: refreshed,
                cacheType: .memory,
                completion: nil
            )
        }
        if storeType.includesDisk {
            manager.imageCache.store(
                nil,
                data: data,
                forKey: inputs.cacheKey.rawValue,
                metadata: refreshed,
                cacheType: .disk,
                completion: nil
            )
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

    /// Revalidates the key's stale entry with no caller waiting: one request per key at a time
    /// (a task of its own, outside the pool), whose answer (a `304`'s headers or a changed image)
    /// is stored for the next load.
    func revalidateInBackground(_ cached: CachedCopy) {
        let key = inputs.cacheKey.rawValue
        guard manager.revalidating.withLock({ $0.insert(key).inserted }) else { return }
        let loadKey = ResultLoad.Key(
            cacheKey: inputs.cacheKey,
            url: url,
            options: inputs.options,
            context: inputs.context,
            unshareable: manager.loadNumbers.add(1, ordering: .relaxed).newValue
        )
        let revalidation = ResultLoad(key: loadKey, inputs: inputs, manager: manager) { task in
            _ = task.manager.revalidating.withLock { $0.remove(key) }
        }
        inputs.configuration.logger.debug("revalidating in the background", metadata: ["url": "\(url)"])
        revalidation.fetch(revalidating: cached)
    }
}
