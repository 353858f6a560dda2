import Foundation
@_spi(WebImageInternals) import WebImageCoders
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
        // A memory hit or a refusal needs no continuation.
        let preflight = preflight(url: url, options: options, context: context ?? ImageContext())
        if let immediate = preflight.immediate { return try immediate.get() }
        let outcome: Result<ImageLoadResult, WebImageError> = await withCancellableCallback { continuation in
            start(preflight, url: url) { event in
                switch event {
                case .progress(let received, let expected, _): progress?(received, expected)
                case .partial, .info, .image(_, final: false): break
                case .image(let result, final: true), .notModified(let result), .refreshFailed(let result, _):
                    continuation.resume(returning: .success(result))
                case .failure(let error, _): continuation.resume(returning: .failure(error))
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
            case .failure(let error, _), .refreshFailed(_, let error):
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
