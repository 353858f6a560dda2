import Foundation
import WebImageCoders

// The non-optional `URL` form of the SDWebImage-shaped entry points. The `URL?` form stays for
// SDWebImage parity (a `nil` URL fails with `invalidURL` at run time); with a `URL` in hand the
// compiler picks this one, which forwards to its optional twin unchanged.

extension ImageManager {
    /// ``loadImage(with:options:context:progress:completed:)-(URL?,_,_,_,_)`` for a URL
    /// that is there.
    @discardableResult
    public func loadImage(
        with url: URL,
        options: ImageOptions = [],
        context: ImageContext? = nil,
        progress: ProgressHandler? = nil,
        completed: @escaping CompletedHandler
    ) -> ImageLoadOperation {
        loadImage(with: Optional(url), options: options, context: context, progress: progress, completed: completed)
    }

    /// ``loadImage(with:options:context:progress:)-(URL?,_,_,_)`` for a URL that is there.
    public func loadImage(
        with url: URL,
        options: ImageOptions = [],
        context: ImageContext? = nil,
        progress: (@Sendable (_ received: Int64, _ expected: Int64) -> Void)? = nil
    ) async throws(WebImageError) -> ImageLoadResult {
        try await loadImage(with: Optional(url), options: options, context: context, progress: progress)
    }

    /// ``images(with:options:context:)-(URL?,_,_)`` for a URL that is there.
    public func images(
        with url: URL,
        options: ImageOptions = [],
        context: ImageContext? = nil
    ) -> AsyncThrowingStream<ImageLoadEvent, any Error> {
        images(with: Optional(url), options: options, context: context)
    }

    /// Where `url`'s image is cached (`.none` when nowhere).
    public func cachedImageExists(for url: URL, context: ImageContext? = nil) async -> ImageCacheType {
        await cachedImageExists(for: Optional(url), context: context)
    }

    /// Whether `url`'s image is on disk.
    public func diskImageExists(for url: URL, context: ImageContext? = nil) async -> Bool {
        await diskImageExists(for: Optional(url), context: context)
    }

    /// Stores `image` for `url` in memory and on disk (re-encoded).
    public func saveImageToCache(_ image: DecodedImage, for url: URL, data: Data? = nil) async throws {
        try await saveImageToCache(image, for: Optional(url), data: data)
    }
}
