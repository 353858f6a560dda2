import Foundation
import WebImageCoders

/// An animation transformed a frame at a time: when the context's transformer works on each
/// frame alone (``ImageTransformer/transformsFramesIndependently``) and the load transforms
/// animations (``ImageOptions/transformAnimatedImage``), the loader is asked for the bytes and
/// the load decodes them itself, each frame transformed before the next is decoded. A 2048²
/// animation resized to 256 then holds one source frame's canvases and the small frames, not
/// every full-size frame; the result is the one the whole decode and transform would give.
extension ResultLoad {
    /// Whether this load decodes and transforms after the fetch, a frame at a time for an
    /// animation. Not with a download hook (it sees the whole decoded image), progressive
    /// previews (the loader decodes those), the first frame only, or a caller who wants no image.
    var transformsFrameByFrame: Bool {
        guard let transformer = inputs.context.transformer, transformer.transformsFramesIndependently,
            inputs.options.contains(.transformAnimatedImage), !inputs.configuration.transformsDownloads
        else { return false }
        return inputs.options.isDisjoint(with: [.avoidDecodeImage, .progressiveLoad, .decodeFirstFrameOnly])
    }

    /// Decodes `loaded`'s bytes (fetched undecoded), then transforms, stores and delivers them:
    /// an animation a frame at a time, anything else whole and then through ``transform(_:)``.
    /// A decode that fails goes to `failed`; a transformer that gives no image fails the load.
    func decodeThenTransform(_ loaded: Loaded, failed: @escaping @Sendable (CoderError) -> Void) {
        guard let data = loaded.data, let transformer = inputs.context.transformer else { return transform(loaded) }
        let isCancelled: @Sendable () -> Bool = { [weak self] in self?.isCancelled ?? true }
        guard AnimatedImage.canDecode(data), let header = ImageHeader(data), header.frameCount > 1 else {
            inputs.context.decode(data, options: inputs.options, isCancelled: isCancelled) { [self] result in
                switch result {
                case .success(let image):
                    var decoded = loaded
                    decoded.image = image
                    transform(decoded)
                case .failure(let error): failed(error)
                case nil: break  // abandoned: each operation has told its caller
                }
            }
            return
        }
        inputs.context.decodeTransformingEachFrame(
            data,
            options: inputs.options,
            transformer: transformer,
            key: inputs.cacheKey.rawValue,
            isCancelled: isCancelled
        ) { [self] result in
            guard !isCancelled() else { return }
            switch result {
            case .success(let image?):
                var transformed = loaded
                transformed.image = image
                transformed.stored = .ownBytes(inputs.configuration.cacheSerializer?(image, data, url))
                store(transformed)
            case .success(nil):
                let message = "\(url): the transformer \(transformer.transformerKey) gave no image"
                broadcast(.failure(WebImageError(.badImageData, url: url, message: message), url))
            case .failure(let error): failed(error)
            case nil: break
            }
        }
    }
}
