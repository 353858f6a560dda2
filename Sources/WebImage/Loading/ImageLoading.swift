import Foundation
import WebImageCoders
import WebImageHTTP

/// A source of images for ``ImageManager`` (SDImageLoader): the manager hands each load that
/// missed the cache to the first of its loaders that can request the URL.
/// ``ImageDownloader`` loads http and https, ``FileImageLoader`` loads `file://`.
///
/// A loader coalesces as it sees fit: ``ImageDownloader`` shares one request among the callers of
/// a URL and decodes once per distinct decoding setting; ``FileImageLoader`` shares a read among
/// callers with the same decoding settings. Implementations must be thread-safe and must not call
/// `completed` or `progress` while holding a lock of their own.
public protocol ImageLoading: Sendable {
    /// Whether this loader handles `url` (SDImageLoader's `canRequestImageForURL:`).
    func canRequestImage(for url: URL) -> Bool

    /// Starts, or joins, the load of `url`, decoded as `options` and `context` ask (no image with
    /// `avoidDecodeImage`). `completed` runs with `finished == false` for each progressive
    /// preview, then exactly once with `finished == true`, never on the caller's stack.
    /// - Returns: the handle that cancels this caller's interest (its completion then gets
    ///   `cancelled`); `nil` when the load failed at once.
    func requestImage(
        with url: URL,
        options: ImageOptions,
        context: ImageContext,
        progress: ImageDownloader.ProgressHandler?,
        completed: @escaping ImageLoaderCompletion
    ) -> (any ImageLoadingToken)?

    /// Whether `error` means loading `url` again would fail the same way, so the manager
    /// remembers the URL as failed (SDImageLoader's `shouldBlockFailedURLWithURL:error:`).
    func shouldBlockFailedURL(_ url: URL, error: WebImageError) -> Bool

    /// Whether the manager may write what this loader loads for `url` to the disk cache.
    /// Default `true`; ``DataURLLoader`` says no (a `data:` URL carries its own bytes).
    func storesOnDisk(_ url: URL) -> Bool
}

extension ImageLoading {
    /// Yes: loaded images are worth keeping on disk.
    public func storesOnDisk(_ url: URL) -> Bool { true }
}

/// `(image, data, error, finished, metadata)`: a loader's answer. `metadata` carries the
/// response's content type, validators (`ETag`, `Last-Modified`) and caching headers, which the
/// manager stores with the disk entry and judges its freshness by; a `cacheNotModified` answer
/// carries the `304`'s, which refresh the stored ones.
public typealias ImageLoaderCompletion =
    @Sendable (DecodedImage?, Data?, WebImageError?, Bool, DiskCacheMetadata?) -> Void

/// Cancels one caller's interest in a loader's load.
public protocol ImageLoadingToken: Sendable {
    /// Stops this caller's interest; the load stops when no caller still wants it.
    func cancel()
    /// Changes this caller's priority while its load waits to start. Default: ignored.
    func setPriority(_ priority: ImagePriority)
}

extension ImageLoadingToken {
    /// Ignores the change (a loader without a queue).
    public func setPriority(_ priority: ImagePriority) {}
}

extension DownloadToken: ImageLoadingToken {}

extension ImageDownloader: ImageLoading {
    /// http and https URLs with a valid host and port.
    public func canRequestImage(for url: URL) -> Bool {
        url.httpValidationFailure == nil
    }

    /// ``download(with:options:context:progress:completed:)-(URL?,_,_,_,_)``, with the response's content type
    /// and validators in the final completion.
    public func requestImage(
        with url: URL,
        options: ImageOptions,
        context: ImageContext,
        progress: ProgressHandler?,
        completed: @escaping ImageLoaderCompletion
    ) -> (any ImageLoadingToken)? {
        download(with: url, options: options, context: context, progress: progress) { image, data, error, done, head in
            completed(image, data, error, done, head.map(Self.metadata(of:)))
        }
    }

    /// What the disk cache keeps of a response: its content type, validators and caching
    /// headers, received now.
    static func metadata(of response: HTTPSession.Response) -> DiskCacheMetadata {
        DiskCacheMetadata(
            contentType: response.mimeType,
            etag: response.headers.first { $0.name == .eTag }?.value,
            lastModified: response.headers.first { $0.name == .lastModified }?.value,
            httpCaching: HTTPCachingHeaders(fields: response.headers, receivedDate: Date())
        )
    }

    /// SDWebImage's rules: bad URLs and data, 4xx statuses other than 408 and 429, TLS and
    /// redirect failures are remembered. Cancellation, transient network trouble and statuses a
    /// server recovers from (5xx, 408, 429) are not.
    public func shouldBlockFailedURL(_ url: URL, error: WebImageError) -> Bool {
        switch error.code {
        case .cancelled, .cacheNotModified, .cacheMiss, .blackListed, .cacheStoreFailed: return false
        case .invalidDownloadStatusCode:
            guard let status = error.statusCode else { return true }
            return (400..<500).contains(status) && status != 429 && status != 408
        case .networkError:
            switch error.underlying?.code {
            case .timedOut, .cannotFindHost, .cannotConnect, .connectionLost, .networkError, .cancelled, nil:
                return false
            default: return true
            }
        default: return true
        }
    }
}
