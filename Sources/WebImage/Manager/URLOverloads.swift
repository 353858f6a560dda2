import Foundation
import WebImageCoders

// Non-optional `URL` forms of the SDWebImage-shaped entry points. The `URL?` forms stay for
// SDWebImage parity (a `nil` URL fails with `invalidURL` at run time); with a `URL` in hand
// the compiler picks these, and each forwards to its optional twin unchanged.

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

extension ImageDownloader {
    /// ``download(with:options:context:progress:completed:)-(URL?,_,_,_,_)`` for a URL that
    /// is there. Still `nil` (after `completed` got `invalidURL`) for a scheme other than
    /// http(s).
    @discardableResult
    public func download(
        with url: URL,
        options: ImageOptions = [],
        context: ImageContext? = nil,
        progress: ProgressHandler? = nil,
        completed: @escaping CompletedHandler
    ) -> DownloadToken? {
        download(with: Optional(url), options: options, context: context, progress: progress, completed: completed)
    }

    /// ``image(with:options:context:)-(URL?,_,_)`` for a URL that is there.
    public func image(
        with url: URL,
        options: ImageOptions = [],
        context: ImageContext? = nil
    ) async throws(WebImageError) -> ImageDownloadResult {
        try await image(with: Optional(url), options: options, context: context)
    }

    /// ``events(with:options:context:)-(URL?,_,_)`` for a URL that is there.
    public func events(
        with url: URL,
        options: ImageOptions = [],
        context: ImageContext? = nil
    ) -> AsyncThrowingStream<ImageDownloadEvent, any Error> {
        events(with: Optional(url), options: options, context: context)
    }
}

extension ImagePrefetcher {
    /// ``prefetchURLs(_:options:context:progress:completed:)-([URL?],_,_,_,_)`` for URLs that
    /// are all there.
    @discardableResult
    public func prefetchURLs(
        _ urls: [URL],
        options: ImageOptions? = nil,
        context: ImageContext? = nil,
        progress: (@Sendable (Int, Int) -> Void)? = nil,
        completed: (@Sendable (Int, Int) -> Void)? = nil
    ) -> ImagePrefetchToken {
        prefetchURLs(
            urls.map(Optional.some),
            options: options,
            context: context,
            progress: progress,
            completed: completed
        )
    }

    /// ``prefetch(_:options:context:)-([URL?],_,_)`` for URLs that are all there.
    public func prefetch(_ urls: [URL], options: ImageOptions? = nil, context: ImageContext? = nil) async -> Progress {
        await prefetch(urls.map(Optional.some), options: options, context: context)
    }
}

extension ImageTarget {
    /// ``setImage(with:placeholder:options:context:operationKey:manager:progress:completed:)-(URL?,_,_,_,_,_,_,_)``
    /// for a URL that is there.
    @discardableResult
    // shape: SDWebImage's sd_setImage(with:placeholderImage:options:context:progress:completed:) shape
    public func setImage(
        with url: URL,
        placeholder: DecodedImage? = nil,
        options: ImageOptions = [],
        context: ImageContext? = nil,
        operationKey: String? = nil,
        manager: ImageManager = .shared,
        progress: ImageManager.ProgressHandler? = nil,
        completed: ImageManager.CompletedHandler? = nil
    ) -> ImageLoadOperation? {
        setImage(
            with: Optional(url),
            placeholder: placeholder,
            options: options,
            context: context,
            operationKey: operationKey,
            manager: manager,
            progress: progress,
            completed: completed
        )
    }
}

extension MainActorImageTarget {
    /// ``setImage(with:placeholder:options:context:operationKey:manager:completed:)-(URL?,_,_,_,_,_,_)``
    /// for a URL that is there.
    @discardableResult
    // shape: SDWebImage's sd_setImage(with:placeholderImage:options:context:progress:completed:) shape
    public func setImage(
        with url: URL,
        placeholder: DecodedImage? = nil,
        options: ImageOptions = [],
        context: ImageContext? = nil,
        operationKey: String? = nil,
        manager: ImageManager = .shared,
        completed: (@MainActor (Result<ImageLoadResult, WebImageError>) -> Void)? = nil
    ) -> ImageLoadOperation? {
        setImage(
            with: Optional(url),
            placeholder: placeholder,
            options: options,
            context: context,
            operationKey: operationKey,
            manager: manager,
            completed: completed
        )
    }
}
