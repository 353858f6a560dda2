import Foundation
import Logging
import WebImageCoders
import WebImageHTTP

/// The stages of one load, in order: query the caches → derive from a stored original → fetch
/// (or revalidate) → transform → store → broadcast. Each reads the load's ``Inputs`` from the
/// task; a stage whose task was abandoned meanwhile does no work.
extension ResultLoad {
    /// What a stage hands the next: the image (`nil` when not decoded), its bytes and headers,
    /// where they came from, and what to store under the load's key.
    struct Loaded: Sendable {
        /// Where the bytes came from.
        enum Origin: Sendable {
            /// The loader: the network, a file, a proxy source.
            case loader
            /// The original's disk entry, for a derived image made from it.
            case storedOriginal

            /// How a result reports it: the loader's bytes are no cache hit.
            var cacheType: ImageCacheType { self == .loader ? .none : .disk }
        }

        /// What goes to disk under the load's key.
        enum Stored: Sendable {
            /// The loaded bytes.
            case loadedBytes
            /// The derived image's own bytes (a transformed image or a thumbnail): the cache
            /// serializer's, or `nil` for the cache to encode the image.
            case ownBytes(Data?)
        }

        var image: DecodedImage?
        var data: Data?
        var metadata: DiskCacheMetadata
        var origin: Origin
        var stored = Stored.loadedBytes

        /// The bytes to store under the load's key; `nil`: the cache encodes the image.
        var storedData: Data? {
            switch stored {
            case .loadedBytes: data
            case .ownBytes(let bytes): bytes
            }
        }
    }

    var url: URL { inputs.url }

    // MARK: Query the caches

    /// Runs the stages: the cache query first (unless `fromLoaderOnly`), whose hit is used,
    /// revalidated or refreshed, and whose miss goes on to a stored original or the loader.
    func run() {
        if inputs.options.contains(.fromLoaderOnly) { return fetch(revalidating: nil) }
        var options = inputs.options
        if options.contains(.refreshCached) { options.insert(.queryMemoryData) }
        let query = manager.imageCache.queryImage(
            forKey: inputs.cacheKey.rawValue,
            options: options,
            context: inputs.context,
            // Memory too, though the caller's preflight missed there: a task of the same key
            // may have stored its image and closed in between (its disk write still queued).
            cacheType: .all
        ) { [self] cached in
            guard !isCancelled else { return }
            if cached.isHit { use(cached) } else { loadMissing() }
        }
        attach(cacheOperation: query)
    }

    /// Serves, refreshes or revalidates a cache hit by HTTP's rules (``ImageManager/use(of:options:now:)``).
    private func use(_ cached: ImageCacheQueryResult) {
        let result = ImageLoadResult(
            image: cached.image,
            data: cached.data,
            cacheType: cached.cacheType,
            url: url,
            metadata: cached.metadata
        )
        let copy = { (delivered: Bool) in CachedCopy(result: result, metadata: cached.metadata, delivered: delivered) }
        switch ImageManager.use(of: cached, options: inputs.options, now: Date()) {
        case .serve:
            broadcast(.image(result, final: true))
        case .serveThenRefresh:
            broadcast(.image(result, final: false))
            fetch(revalidating: copy(true))
        case .serveAndRevalidateInBackground:
            broadcast(.image(result, final: true))
            revalidateInBackground(copy(true))
        case .revalidate:
            fetch(revalidating: copy(false))
        }
    }

    /// A miss: a derived image is made from the original on disk when it may be, else fetched.
    private func loadMissing() {
        guard ImageManager.mayUseStoredOriginal(url, options: inputs.options, context: inputs.context) else {
            return fetch(revalidating: nil)
        }
        deriveFromStoredOriginal()
    }

    // MARK: Derive from a stored original

    /// Makes the missing derived image from the original's bytes on disk: decoded with the
    /// load's settings on the decode queue, then transformed, stored and delivered as a download
    /// would be (reported as a disk hit). With no fresh original on disk, or one that does not
    /// decode, the load goes on to the network.
    private func deriveFromStoredOriginal() {
        var options = inputs.options
        options.insert(.avoidDecodeImage)
        let query = manager.imageCache.queryImage(
            forKey: inputs.originalKey,
            options: options,
            context: nil,
            cacheType: .disk
        ) { [self] stored in
            guard !isCancelled else { return }
            // A stale original is fetched again (the new image replaces it) rather than derived from.
            guard let data = stored.data, stored.metadata?.freshness?.use(at: Date()) != .stale else {
                return fetch(revalidating: nil)
            }
            let metadata = stored.metadata ?? DiskCacheMetadata(contentType: ImageFormat(sniffing: data).mimeType)
            let original = Loaded(image: nil, data: data, metadata: metadata, origin: .storedOriginal)
            guard !inputs.options.contains(.avoidDecodeImage) else { return transform(original) }
            if transformsFrameByFrame {
                // A stored original that does not decode: the network may have a better copy.
                return decodeThenTransform(original) { _ in self.fetch(revalidating: nil) }
            }
            inputs.context.decode(data, options: inputs.options, isCancelled: { self.isCancelled }) { result in
                switch result {
                case .success(let image):
                    var decoded = original
                    decoded.image = image
                    self.transform(decoded)
                case .failure: self.fetch(revalidating: nil)  // the network may have a better copy
                case nil: break  // cancelled: each operation has told its caller
                }
            }
        }
        attach(cacheOperation: query)
    }

    // MARK: Fetch

    /// Loads the image from its loader; with `cached`, revalidates that copy (a conditional
    /// request when it has validators) and settles on it when the origin says it has not changed.
    func fetch(revalidating cached: CachedCopy?) {
        guard !inputs.options.contains(.fromCacheOnly), inputs.configuration.shouldDownload(url, manager: manager)
        else {
            let notCached = WebImageError(
                .cacheMiss,
                url: url,
                message: "\(url): not cached, and the network is not allowed"
            )
            return broadcast(cached?.settled ?? .failure(notCached, url))
        }
        let loader = inputs.loader
        var (options, context) = loaderRequest(revalidating: cached)
        // A revalidation keeps the loader's decode: its failure may fall back on the cached copy.
        let decodesAfter = cached == nil && transformsFrameByFrame
        if decodesAfter { options.insert(.avoidDecodeImage) }
        let token = loader.requestImage(
            with: url,
            options: options,
            context: context,
            progress: { [self] received, expected, url in broadcast(.progress(received, expected, url)) },
            completed: { [self] image, data, error, finished, metadata in
                guard finished else {
                    if let image { broadcast(.partial(image, url)) }
                    return
                }
                guard let error else {
                    let loaded = Loaded(
                        image: image,
                        data: data,
                        metadata: metadata ?? DiskCacheMetadata(),
                        origin: .loader
                    )
                    guard decodesAfter, image == nil else { return transform(loaded) }
                    return decodeThenTransform(loaded) { [self] error in
                        let message = "\(url): \(error)"
                        fail(
                            WebImageError(.badImageData, url: url, message: message, coderError: error),
                            revalidating: nil
                        )
                    }
                }
                if error.code == .cacheNotModified, let cached {
                    refreshStoredCopy(cached, notModified: metadata)
                    return broadcast(cached.settled)
                }
                fail(error, revalidating: cached)
            }
        )
        attach(loaderToken: token, requestedPriority: context.priority ?? .normal)
    }

    /// What the loader is asked with: the task's priority and, with a cached copy, its
    /// validators (a conditional request); the early image facts go to the caller's handler and
    /// to the load's events.
    private func loaderRequest(revalidating cached: CachedCopy?) -> (ImageOptions, ImageContext) {
        var options = inputs.options
        var context = inputs.context
        if let cached {
            context.cachedResponse = ImageContext.CachedResponse(
                etag: cached.metadata?.etag,
                lastModified: cached.metadata?.lastModified,
                data: cached.result.data
            )
            options.insert(.refreshCached)  // the loader sends the validators
        }
        let callerInfo = inputs.context.imageInfoHandler
        context.imageInfoHandler = { [self] header, url in
            callerInfo?(header, url)
            broadcast(.info(header, url))
        }
        context.priority = priority
        return (options, context)
    }

    /// A failed load: a stale copy stands in when HTTP allows it; a failure for good is
    /// remembered (the failed-URL list); a refresh of a delivered copy ends with that copy.
    func fail(_ error: WebImageError, revalidating cached: CachedCopy?) {
        let logger = inputs.configuration.logger
        if let cached, !cached.delivered, servesStale(cached, after: error) {
            logger.notice(
                "stale image served: revalidation failed",
                metadata: ["url": "\(url)", "error": "\(error.code.rawValue)"]
            )
            return broadcast(cached.settled)
        }
        if inputs.configuration.shouldBlock(url, error: error, loader: inputs.loader, manager: manager) {
            manager.failed.insert(url, error: error)
            logger.notice("URL blacklisted", metadata: ["url": "\(url)", "error": "\(error.code.rawValue)"])
        }
        if let cached, cached.delivered, error.code != .cancelled {
            return broadcast(.refreshFailed(cached.result, error))
        }
        broadcast(.failure(error, url))
    }
}
