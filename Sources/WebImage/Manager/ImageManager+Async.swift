import Foundation
import WebImageCoders
import WebImageHTTP

extension ImageManager {
    /// Loads `url` and returns the image. With `refreshCached` and a cached image, returns the
    /// revalidated image (the cached one when the server says "not modified"). Cancelling the
    /// Swift task cancels the load. `progress` receives `(receivedBytes, expectedBytes)` while
    /// the image downloads (expected is 0 or less when unknown), on the loader's threads.
    public func loadImage(
        with url: URL?,
        options: ImageOptions = [],
        context: ImageContext? = nil,
        progress: (@Sendable (_ received: Int64, _ expected: Int64) -> Void)? = nil
    ) async throws(WebImageError) -> ImageLoadResult {
        // A plain memory hit needs no continuation.
        if let url, options.isDisjoint(with: [.refreshCached, .fromLoaderOnly, .queryMemoryData]),
            !failedURLs.contains(url) || options.contains(.retryFailed),
            let image = imageCache.imageFromMemoryCache(forKey: cacheKey(for: url, context: context))
        {
            return ImageLoadResult(image: image, data: nil, cacheType: .memory, url: url)
        }
        let outcome: Result<ImageLoadResult, WebImageError> = await withCancellableCallback { continuation in
            let latest = Protected<ImageLoadResult?>(nil)
            return start(url: url, options: options, context: context ?? ImageContext()) { event in
                switch event {
                case .progress(let received, let expected, _): progress?(received, expected)
                case .partial, .info: break
                case .image(let result, let final):
                    if final {
                        continuation.resume(returning: .success(result))
                    } else {
                        latest.withLock { $0 = result }
                    }
                case .failure(let error, _):
                    if let cached = latest.withLock({ $0 }), error.code != .cancelled {
                        continuation.resume(returning: .success(cached))
                    } else {
                        continuation.resume(returning: .failure(error))
                    }
                case .notModified(let cached): continuation.resume(returning: .success(cached))
                }
            }
        } cancel: { operation in
            operation.cancel()
        }
        return try outcome.get()
    }

    /// The load as a stream of progress, previews and images; failures end it with a
    /// ``WebImageError``. Ending the iteration early cancels the load.
    public func images(
        with url: URL?,
        options: ImageOptions = [],
        context: ImageContext? = nil
    ) -> AsyncThrowingStream<ImageLoadEvent, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: ImageLoadEvent.self)
        let operation = start(url: url, options: options, context: context ?? ImageContext()) { event in
            switch event {
            case .progress(let received, let expected, _):
                continuation.yield(.progress(received: received, expected: expected))
            case .partial(let image, _): continuation.yield(.partial(image))
            case .info(let header, _): continuation.yield(.info(header))
            case .image(let result, let final):
                continuation.yield(.image(result))
                if final { continuation.finish() }
            case .failure(let error, _):
                continuation.finish(throwing: error)
            case .notModified: continuation.finish()
            }
        }
        continuation.onTermination = { termination in
            if case .cancelled = termination { operation.cancel() }
        }
        return stream
    }
}
