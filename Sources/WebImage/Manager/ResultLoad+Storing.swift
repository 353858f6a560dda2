import Foundation
import Logging
import WebImageCoders
import WebImageHTTP

/// The last stages of a load: transform, store, broadcast.
///
/// A derived image (a thumbnail smaller than the original, or a transformer's output) is stored
/// as its own bytes under its key, and the original's bytes under the original's key, so another
/// size or transformation of the same original needs no download.
extension ResultLoad {
    // MARK: Transform

    /// Transforms a loaded image, then stores and delivers it. Transforms (the context's
    /// transformer and ``ImageManager/Configuration/transformDownloadedImage``) run on the
    /// context's transform queue (``ImageWorkQueue/transforming`` by default), not on the decode
    /// worker that produced the image; work whose load was abandoned meanwhile is skipped.
    func transform(_ loaded: Loaded) {
        guard transforms(loaded.image) else { return store(loaded) }
        let queue = inputs.context.transformQueue ?? .transforming
        queue.enqueue(priority: ImageWorkQueue.Priority(inputs.options)) { [self] in
            guard !isCancelled, let transformed = applyTransforms(to: loaded) else { return }
            store(transformed)
        }
    }

    /// Whether `image` goes through a transform: a transformer or hook is set, and the image is
    /// still (or `transformAnimatedImage` allows an animation).
    private func transforms(_ image: DecodedImage?) -> Bool {
        guard inputs.context.transformer != nil || inputs.configuration.transformsDownloads, let image else {
            return false
        }
        return !image.isAnimated || inputs.options.contains(.transformAnimatedImage)
    }

    /// The image after the manager's hook and the context's transformer, with the bytes to store
    /// for it; `nil` once the failure went out (a transformer that gave no image).
    private func applyTransforms(to loaded: Loaded) -> Loaded? {
        guard var image = loaded.image else { return loaded }
        var changed = false
        if let hooked = inputs.configuration.transformDownloaded(image, url: url, manager: manager) {
            image = hooked
            changed = true
        }
        if let transformer = inputs.context.transformer {
            guard let transformed = transformer.transform(image, forKey: inputs.cacheKey.rawValue) else {
                let message = "\(url): the transformer \(transformer.transformerKey) gave no image"
                broadcast(.failure(WebImageError(.badImageData, url: url, message: message), url))
                return nil
            }
            image = transformed
            changed = true
        }
        guard changed else { return loaded }
        var transformed = loaded
        transformed.image = image
        transformed.stored = .ownBytes(inputs.configuration.cacheSerializer?(image, loaded.data, url))
        return transformed
    }

    // MARK: Store and broadcast

    /// Stores the image (memory first, so a load of the key that starts once this task has
    /// closed finds it there; then disk) and delivers it; with `waitStoreCache`, once the disk
    /// write has ended.
    func store(_ loaded: Loaded) {
        if inputs.options.contains(.retryFailed) { manager.failed.remove(url) }
        let loaded = withThumbnailBytes(loaded)
        let storeType = storeType(for: loaded)
        storeOriginal(of: loaded, in: storeType)
        let result = ImageLoadResult(
            image: loaded.image,
            data: loaded.data,
            cacheType: loaded.origin.cacheType,
            url: url,
            metadata: loaded.metadata
        )
        inputs.configuration.logger.debug(
            loaded.origin == .storedOriginal ? "made from the original on disk" : "loaded",
            metadata: ["url": "\(url)", "key": "\(inputs.cacheKey)"]
        )
        let storedData = loaded.storedData
        guard storeType != .none, loaded.image != nil || storedData != nil else {
            return broadcast(.image(result, final: true))
        }
        let cache = manager.imageCache
        if storeType.includesMemory, let image = loaded.image {
            cache.store(
                image,
                data: nil,
                forKey: inputs.cacheKey.rawValue,
                metadata: loaded.metadata,
                cacheType: .memory,
                completion: nil
            )
        }
        guard storeType.includesDisk else { return broadcast(.image(result, final: true)) }
        let waits = inputs.options.contains(.waitStoreCache)
        cache.store(
            storedData == nil ? loaded.image : nil,
            data: storedData,
            forKey: inputs.cacheKey.rawValue,
            metadata: loaded.metadata,
            cacheType: .disk,
            completion: waits ? deliveringWhenStored(result) : nil
        )
        if !waits { broadcast(.image(result, final: true)) }
    }

    /// Where the image may be kept: nowhere for a response that says `no-store` or `Vary: *`, or
    /// an image ``ImageManager/Configuration/shouldCacheImage`` declines; memory only for
    /// `cacheMemoryOnly` and what its loader keeps off disk (a `data:` URL's bytes); else the
    /// context's store type.
    private func storeType(for loaded: Loaded) -> ImageCacheType {
        if loaded.metadata.httpCaching?.isStorable == false { return .none }
        if let shouldCache = inputs.configuration.shouldCacheImage, let image = loaded.image,
            !shouldCache(image, url)
        {
            return .none
        }
        let storeType = inputs.context.storeCacheType
        let memoryOnly =
            inputs.options.contains(.cacheMemoryOnly) || !inputs.loader.storesOnDisk(url)
        guard memoryOnly else { return storeType }
        return storeType.includesMemory ? .memory : .none
    }

    /// A thumbnail decoded smaller than its original is stored as its own bytes (re-encoded by
    /// the cache when the serializer gives none): a thumbnail disk hit then decodes the
    /// thumbnail, not the whole original. An animation decoded on demand keeps the loaded bytes
    /// (its frames come from them).
    private func withThumbnailBytes(_ loaded: Loaded) -> Loaded {
        guard inputs.context.thumbnailPixelSize != nil, case .loadedBytes = loaded.stored, let image = loaded.image,
            image.animation == nil, let data = loaded.data, Self.isReduced(image, from: data)
        else { return loaded }
        var thumbnail = loaded
        thumbnail.stored = .ownBytes(inputs.configuration.cacheSerializer?(image, data, url))
        return thumbnail
    }

    /// A derived image's original bytes, downloaded with it, go to disk under the URL's own key.
    private func storeOriginal(of loaded: Loaded, in storeType: ImageCacheType) {
        guard ImageManager.derivesImage(inputs.context), loaded.origin == .loader, !url.isFileURL,
            let data = loaded.data, storeType.includesDisk
        else { return }
        manager.imageCache.store(
            nil,
            data: data,
            forKey: inputs.originalKey,
            metadata: loaded.metadata,
            cacheType: .disk,
            completion: nil
        )
    }

    /// The disk write's completion for a `waitStoreCache` caller: `result`, or the write's
    /// failure. Only such a caller keeps the result (and its decoded image) until the write ends.
    private func deliveringWhenStored(_ result: ImageLoadResult) -> @Sendable ((any Error)?) -> Void {
        { [self] error in
            let event: ImageManager.Event =
                error.map {
                    .failure(
                        WebImageError(.cacheStoreFailed, url: url, message: "\(url): not stored on disk: \($0)"),
                        url
                    )
                } ?? .image(result, final: true)
            // The store completion runs on the cache's write queue: the caller's completion must
            // not hold up the writes queued behind it.
            DispatchQueue.global().async { self.broadcast(event) }
        }
    }

    /// Whether `image` has fewer pixels than the original `data` declares: a thumbnail worth
    /// storing on its own, not a copy of the original.
    static func isReduced(_ image: DecodedImage, from data: Data) -> Bool {
        guard let header = ImageHeader(data) else { return true }
        return image.width * image.height < header.size.width * header.size.height
    }
}
