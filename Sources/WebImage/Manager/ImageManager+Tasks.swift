import Foundation
import WebImageCoders

/// The request-and-task API (Nuke's and Kingfisher's shape) over the same pipeline as the
/// SDWebImage-shaped calls: loads of one key share one load task either way.
extension ImageManager {
    /// Starts loading `request` and returns its handle; see ``ImageTask``.
    public func imageTask(with request: ImageRequest) -> ImageTask {
        let task = ImageTask(request: request)
        let operation = start(url: request.url, options: request.resolvedOptions, context: request.resolvedContext) {
            [task] event in task.receive(event)
        }
        task.attach(operation)
        return task
    }

    /// Starts loading `url` with the default request; see ``ImageTask``.
    public func imageTask(with url: URL) -> ImageTask { imageTask(with: ImageRequest(url: url)) }

    /// Loads `request` and returns the result. Cancelling the Swift task cancels the load.
    /// - Throws: ``WebImageError``; a decode failure carries its ``WebImageError/coderError``.
    public func loadImage(with request: ImageRequest) async throws(WebImageError) -> ImageLoadResult {
        try await imageTask(with: request).response
    }

    /// Loads `url` and calls `completion` once with the result (on ``Configuration/callbackQueue`` when set,
    /// else on the producing thread; at once on the caller's thread for a memory hit).
    /// `progress` receives bytes and the total when known; `preview` receives progressive
    /// previews (with ``ImageOptions/progressiveLoad``). Returns the operation that cancels it:
    /// `completion` then gets ``WebImageError/Code/cancelled``.
    @discardableResult
    public func loadImage(
        with url: URL,
        options: ImageOptions = [],
        context: ImageContext? = nil,
        progress: (@Sendable (ImageTask.Progress) -> Void)? = nil,
        preview: (@Sendable (DecodedImage) -> Void)? = nil,
        completion: @escaping @Sendable (Result<ImageLoadResult, WebImageError>) -> Void
    ) -> ImageLoadOperation {
        // With refreshCached the cached image comes first; the completion gets the final one.
        start(url: url, options: options, context: context ?? ImageContext()) { event in
            switch event {
            case .progress(let received, let expected, _):
                progress?(ImageTask.Progress(completed: received, total: expected > 0 ? expected : nil))
            case .partial(let image, _): preview?(image)
            case .info, .image(_, final: false): break
            case .image(let result, final: true), .notModified(let result), .refreshFailed(let result, _):
                completion(.success(result))
            case .failure(let error, _): completion(.failure(error))
            }
        }
    }

    /// Loads `request` and calls `completion` once with the result; see
    /// ``loadImage(with:options:context:progress:preview:completion:)``.
    @discardableResult
    public func loadImage(
        with request: ImageRequest,
        progress: (@Sendable (ImageTask.Progress) -> Void)? = nil,
        preview: (@Sendable (DecodedImage) -> Void)? = nil,
        completion: @escaping @Sendable (Result<ImageLoadResult, WebImageError>) -> Void
    ) -> ImageLoadOperation {
        loadImage(
            with: request.url,
            options: request.resolvedOptions,
            context: request.resolvedContext,
            progress: progress,
            preview: preview,
            completion: completion
        )
    }
}
