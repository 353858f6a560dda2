import Foundation
import WebImageCoders

// The non-optional `URL` form of the SDWebImage-shaped entry points. The `URL?` form stays for
// SDWebImage parity (a `nil` URL fails with `invalidURL` at run time); with a `URL` in hand the
// compiler picks this one, which forwards to its optional twin unchanged.

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
