import Foundation
import Logging
import WebImageCoders
import WebImageHTTP

extension ImageManager {
    /// Transforms, stores and delivers a loaded image. `source` is where `data` came from: the
    /// network or a file (`.none`), or the original's disk entry (`.disk`) for a derived image.
    ///
    /// A derived image (a thumbnail smaller than the original, or a transformer's output) is
    /// stored as its own bytes under its key, and the original's bytes under the original's key,
    /// so another size or transformation of the same original needs no download.
    ///
    /// Transforms (the context's transformer and ``Configuration/transformDownloadedImage``) run on the
    /// context's transform queue (``ImageWorkQueue/transforming`` by default), not on the decode
    /// worker that produced the image; work whose load was cancelled meanwhile is skipped.
    // shape: issue 33 splits this (named in its notes: the load task owning its stages, or a long function doing several jobs)
    func finishDownload(
        url: URL,
        key: String,
        image: DecodedImage?,
        data: Data?,
        metadata: DiskCacheMetadata,
        options: ImageOptions,
        context: ImageContext,
        source: ImageCacheType = .none,
        isCancelled: @escaping @Sendable () -> Bool = { false },
        deliver: @escaping @Sendable (Event) -> Void
    ) {
        let transforms =
            (context.transformer != nil || configuration.transformsDownloads)
            && image.map { !$0.isAnimated || options.contains(.transformAnimatedImage) } == true
        let finish: @Sendable () -> Void = { [self] in
            transformStoreAndDeliver(
                url: url,
                key: key,
                image: image,
                data: data,
                metadata: metadata,
                options: options,
                context: context,
                source: source,
                deliver: deliver
            )
        }
        guard transforms else { return finish() }
        (context.transformQueue ?? .transforming).enqueue(priority: ImageWorkQueue.Priority(options)) {
            if !isCancelled() { finish() }
        }
    }

    // shape: issue 33 splits this (named in its notes: the load task owning its stages, or a long function doing several jobs)
    private func transformStoreAndDeliver(
        url: URL,
        key: String,
        image: DecodedImage?,
        data: Data?,
        metadata: DiskCacheMetadata,
        options: ImageOptions,
        context: ImageContext,
        source: ImageCacheType,
        deliver: @escaping @Sendable (Event) -> Void
    ) {
        if options.contains(.retryFailed) { failed.remove(url) }
        // What its loader keeps off disk (a data: URL's bytes) stays in memory only. A response
        // that says `no-store` or `Vary: *` is not kept at all.
        let memoryOnly = options.contains(.cacheMemoryOnly) || loader(for: url)?.storesOnDisk(url) == false
        let storeType: ImageCacheType =
            metadata.freshness?.isStorable == false
            ? .none : memoryOnly ? (context.storeCacheType.includesMemory ? .memory : .none) : context.storeCacheType
        var delivered = image
        var storedData = data
        var transformedHere = false
        if var transformed = image, !transformed.isAnimated || options.contains(.transformAnimatedImage) {
            var changed = false
            if let result = configuration.transformDownloaded(transformed, url: url, manager: self) {
                transformed = result
                changed = true
            }
            if let transformer = context.transformer {
                guard let result = transformer.transform(transformed, forKey: key) else {
                    deliver(
                        .failure(
                            WebImageError(
                                .badImageData,
                                url: url,
                                message: "\(url): the transformer \(transformer.transformerKey) gave no image"
                            ),
                            url
                        )
                    )
                    return
                }
                transformed = result
                changed = true
            }
            if changed {
                delivered = transformed
                storedData = configuration.cacheSerializer?(transformed, data, url)
                transformedHere = true
            }
        }
        if context.thumbnailPixelSize != nil, !transformedHere, let delivered, let data,
            Self.isReduced(delivered, from: data)
        {
            // The thumbnail's own bytes (re-encoded by the cache when the serializer gives none):
            // a thumbnail disk hit then decodes the thumbnail, not the whole original.
            storedData = configuration.cacheSerializer?(delivered, data, url)
        }
        if Self.derivesImage(context), source == .none, !url.isFileURL, let data, storeType.includesDisk {
            imageCache.store(
                nil,
                data: data,
                forKey: cacheKey(for: url, context: nil),
                metadata: metadata,
                cacheType: .disk,
                completion: nil
            )
        }
        let result = ImageLoadResult(image: delivered, data: data, cacheType: source, url: url)
        configuration.logger.debug(
            source == .disk ? "made from the original on disk" : "loaded",
            metadata: ["url": "\(url)", "key": "\(key)"]
        )
        guard storeType != .none, delivered != nil || storedData != nil else {
            deliver(.image(result, final: true))
            return
        }
        // Memory first: a load of the key that starts once this task has closed finds it there.
        if storeType.includesMemory, delivered != nil {
            imageCache.store(delivered, data: nil, forKey: key, metadata: metadata, cacheType: .memory, completion: nil)
        }
        guard storeType.includesDisk else {
            deliver(.image(result, final: true))
            return
        }
        let waits = options.contains(.waitStoreCache)
        imageCache.store(
            storedData == nil ? delivered : nil,
            data: storedData,
            forKey: key,
            metadata: metadata,
            cacheType: .disk,
            completion: waits ? Self.deliveringWhenStored(result, deliver: deliver) : nil
        )
        if !waits { deliver(.image(result, final: true)) }
    }

    /// The disk write's completion for a `waitStoreCache` caller: `result`, or the write's
    /// failure. Only such a caller keeps the result (and its decoded image) until the write ends.
    private static func deliveringWhenStored(
        _ result: ImageLoadResult,
        deliver: @escaping @Sendable (Event) -> Void
    ) -> @Sendable ((any Error)?) -> Void {
        { error in
            let url = result.url
            let event: Event =
                error.map {
                    .failure(
                        WebImageError(.cacheStoreFailed, url: url, message: "\(url): not stored on disk: \($0)"),
                        url
                    )
                } ?? .image(result, final: true)
            // The store completion runs on the cache's write queue: the caller's completion must
            // not hold up the writes queued behind it.
            DispatchQueue.global().async { deliver(event) }
        }
    }

}
