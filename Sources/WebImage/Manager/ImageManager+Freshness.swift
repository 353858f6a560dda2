import Foundation
import Logging
import Synchronization
import WebImageHTTP

// How the manager judges a cache hit by HTTP's caching rules, and when a derived image may be
// made from the stored original.
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
