import Foundation
import WebImageCoders

// The non-optional `URL` form of the SDWebImage-shaped entry points. The `URL?` form stays for
// SDWebImage parity (a `nil` URL fails with `invalidURL` at run time); with a `URL` in hand the
// compiler picks this one, which forwards to its optional twin unchanged.

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
