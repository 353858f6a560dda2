import Foundation
import WebImageCoders

extension ImageManager {
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

    /// Makes the missing derived image for `key` from the original's bytes on disk: decoded with
    /// the load's settings on the decode queue, then transformed, stored and delivered as a
    /// download would be (reported as a disk hit). Calls `otherwise` when no original is stored
    /// or it does not decode, so the load goes on to the network.
    func loadFromStoredOriginal(
        url: URL,
        key: String,
        options: ImageOptions,
        context: ImageContext,
        task: ImageLoadTask,
        deliver: @escaping @Sendable (Event) -> Void,
        otherwise: @escaping @Sendable () -> Void
    ) {
        let originalKey = cacheKey(for: url, context: nil)
        var queryOptions = options
        queryOptions.insert(.avoidDecodeImage)
        let query = imageCache.queryImage(forKey: originalKey, options: queryOptions, context: nil, cacheType: .disk) {
            [self] stored in
            guard !task.isCancelled else { return }
            // A stale original is fetched again (the new image replaces it) rather than derived from.
            guard let data = stored.data, stored.metadata?.freshness?.use(at: Date()) != .stale else {
                return otherwise()
            }
            let finish: @Sendable (DecodedImage?) -> Void = { [self] image in
                finishDownload(
                    url: url,
                    key: key,
                    image: image,
                    data: data,
                    metadata: stored.metadata ?? DiskCacheMetadata(contentType: ImageFormat(sniffing: data).mimeType),
                    options: options,
                    context: context,
                    source: .disk,
                    isCancelled: { task.isCancelled },
                    deliver: deliver
                )
            }
            guard !options.contains(.avoidDecodeImage) else { return finish(nil) }
            context.decode(data, options: options, isCancelled: { task.isCancelled }) { result in
                switch result {
                case .success(let image): finish(image)
                case .failure: otherwise()  // the network may have a better copy
                case nil: break  // cancelled: the operation has told its caller
                }
            }
        }
        task.attach(cacheOperation: query)
    }

    /// Whether `image` has fewer pixels than the original `data` declares: a thumbnail worth
    /// storing on its own, not a copy of the original.
    static func isReduced(_ image: DecodedImage, from data: Data) -> Bool {
        guard let header = ImageHeader(data) else { return true }
        return image.width * image.height < header.size.width * header.size.height
    }
}
