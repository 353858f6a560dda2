import Foundation
import Logging
import Synchronization
import WebImageHTTP

/// HTTP's caching rules for cache hits (RFC 9111): a fresh entry is used as it is, a stale one
/// is revalidated first (or, within `stale-while-revalidate`, used at once and revalidated in
/// the background), and a `304` refreshes the stored headers.
extension ImageLoadTask {
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
                forKey: inputs.key,
                metadata: refreshed,
                cacheType: .memory,
                completion: nil
            )
        }
        if storeType.includesDisk {
            manager.imageCache.store(
                nil,
                data: data,
                forKey: inputs.key,
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
        let key = inputs.key
        guard manager.revalidating.withLock({ $0.insert(key).inserted }) else { return }
        let loadKey = ImageLoadKey(
            cacheKey: inputs.cacheKey,
            url: url,
            options: inputs.options,
            context: inputs.context,
            unshareable: manager.loadNumbers.add(1, ordering: .relaxed).newValue
        )
        let revalidation = ImageLoadTask(key: loadKey, inputs: inputs, manager: manager) { task in
            _ = task.manager.revalidating.withLock { $0.remove(key) }
        }
        inputs.configuration.logger.debug("revalidating in the background", metadata: ["url": "\(url)"])
        revalidation.fetch(revalidating: cached)
    }
}

extension ImageManager {
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

    /// Whether `context` asks for an image derived from the original (a thumbnail, a decode with
    /// another colour policy, or a transformer's output), cached under its own key beside the
    /// original's bytes.
    static func derivesImage(_ context: ImageContext) -> Bool {
        context.thumbnailPixelSize != nil || context.colorPolicy != .convertToSRGB || context.transformer != nil
    }

    /// Whether a load may make its missing derived image from the original's bytes on disk
    /// instead of downloading: not for files (the file is the original), and not when the
    /// caller wants the network's answer (`refreshCached`, `fromLoaderOnly`).
    static func mayUseStoredOriginal(_ url: URL, options: ImageOptions, context: ImageContext) -> Bool {
        derivesImage(context) && !url.isFileURL && !options.contains(.refreshCached)
            && !options.contains(.fromLoaderOnly)
    }
}
