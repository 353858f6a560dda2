import Foundation
import HTTPTypes
import Synchronization
import WebImage
@_spi(WebImageInternals) import WebImageCoders
import WebImageHTTP

/// A source of the proxy that is not http(s), as a loader of its ``ImageManager``: `s3://`
/// (``s3(_:limit:)``) or `local://` (``local(_:limit:)``). Each caller's load runs `fetch` in a
/// task of its own; the manager coalesces callers of one key before they get here.
struct ProxySourceLoader: ImageLoading {
    /// The URL scheme it loads, lower-case.
    let scheme: String
    /// Whether the originals cache keeps what it loads.
    let keepsCopies: Bool
    /// The bytes (`nil`: not modified, for a conditional load) and what is known of them.
    let fetch: @Sendable (URL, ImageOptions, ImageContext) async throws(ProxyError) -> (Data?, DiskCacheMetadata)

    /// `s3://bucket/key` sources: the manager keeps each object in the originals cache with its
    /// ETag and revalidates it at every use with `If-None-Match` (the metadata says `no-cache`),
    /// so a 304 moves no body. An object S3 gives without an ETag is not kept (`no-store`):
    /// there would be nothing to revalidate it with.
    static func s3(_ source: S3Source, limit: Int64) -> ProxySourceLoader {
        ProxySourceLoader(scheme: "s3", keepsCopies: true) {
            (url, options, context) async throws(ProxyError) -> (Data?, DiskCacheMetadata) in
            let sent = options.contains(.refreshCached) ? context.cachedResponse?.etag : nil
            switch try await source.fetch(url, limit: limit, ifNoneMatch: sent) {
            case .notModified:
                return (nil, s3Metadata(etag: sent, lastModified: nil, contentType: nil))
            case .object(let data, let etag, let lastModified):
                let type = ImageFormat(sniffing: data).mimeType
                return (data, s3Metadata(etag: etag, lastModified: lastModified, contentType: type))
            }
        }
    }

    /// What the originals cache keeps with an S3 object: revalidated at each use when it has an
    /// ETag, never kept without one.
    static func s3Metadata(etag: String?, lastModified: String?, contentType: String?) -> DiskCacheMetadata {
        DiskCacheMetadata(
            contentType: contentType,
            etag: etag,
            lastModified: lastModified,
            httpCaching: HTTPCachingHeaders(cacheControl: etag == nil ? "no-store" : "no-cache", receivedDate: Date())
        )
    }

    /// `local:///path` sources: files under the local root, read on the disk-reading queue,
    /// never copied into the originals cache. The file's modification time is its
    /// `Last-Modified`.
    static func local(_ root: LocalSourceRoot, limit: Int64) -> ProxySourceLoader {
        ProxySourceLoader(scheme: "local", keepsCopies: false) {
            (url, _, _) async throws(ProxyError) -> (Data?, DiskCacheMetadata) in
            let (data, modified) = try await root.read(url, limit: limit)
            let metadata = DiskCacheMetadata(
                contentType: ImageFormat(sniffing: data).mimeType,
                lastModified: modified.map(HTTPDate.string(from:))
            )
            return (data, metadata)
        }
    }

    func canRequestImage(for url: URL) -> Bool { url.scheme?.lowercased() == scheme }

    func requestImage(
        with url: URL,
        options: ImageOptions,
        context: ImageContext,
        progress: ImageDownloader.ProgressHandler?,
        completed: @escaping ImageLoaderCompletion
    ) -> (any ImageLoadingToken)? {
        let fetch = fetch
        return SourceLoad.start(url: url, options: options, context: context, completed: completed) {
            () async throws(ProxyError) -> (Data?, DiskCacheMetadata) in
            try await fetch(url, options, context)
        }
    }

    /// The schemes of these sources, and what a request for one is told when the server has
    /// that source off.
    static let refusalsWhenOff = [
        "local": "local sources are off (--local-root names their folder)",
        "s3": "S3 sources are off (--s3)",
    ]

    /// The proxy answers for its sources: no failure is remembered against the URL.
    func shouldBlockFailedURL(_ url: URL, error: WebImageError) -> Bool { false }

    func storesOnDisk(_ url: URL) -> Bool { keepsCopies }
}

/// One caller's load from a proxy source: `fetch` runs in a task of its own; its bytes are
/// decoded when the caller asks for an image. The completion runs exactly once: with the
/// result, or with `cancelled` when the caller cancels first (the fetch is then cancelled too).
private final class SourceLoad: ImageLoadingToken {
    private let completion: Mutex<ImageLoaderCompletion?>
    private let url: URL
    private let task = Mutex<Task<Void, Never>?>(nil)

    private init(url: URL, completion: @escaping ImageLoaderCompletion) {
        self.url = url
        self.completion = Mutex(completion)
    }

    /// Starts `fetch` (bytes, or `nil` for "not modified", and their metadata) for one caller.
    static func start(
        url: URL,
        options: ImageOptions,
        context: ImageContext,
        completed: @escaping ImageLoaderCompletion,
        fetch: @escaping @Sendable () async throws(ProxyError) -> (Data?, DiskCacheMetadata)
    ) -> SourceLoad {
        let load = SourceLoad(url: url, completion: completed)
        let task = Task {
            do throws(ProxyError) {
                let (data, metadata) = try await fetch()
                guard let data else {
                    let notModified = WebImageError(
                        .cacheNotModified,
                        url: url,
                        message: "\(url): not modified (304)",
                        statusCode: 304
                    )
                    return load.finish(nil, nil, notModified, metadata)
                }
                guard !options.contains(.avoidDecodeImage) else { return load.finish(nil, data, nil, metadata) }
                context.decode(data, options: options, isCancelled: { load.isFinished }) { result in
                    switch result {
                    case .success(let image): load.finish(image, data, nil, metadata)
                    case .failure(let error):
                        let failure = WebImageError(
                            .badImageData,
                            url: url,
                            message: "\(url): \(error)",
                            coderError: error
                        )
                        load.finish(nil, data, failure, nil)
                    case nil: break  // cancelled: the caller has had its completion
                    }
                }
            } catch {
                load.finish(nil, nil, error.loaderError(for: url), nil)
            }
        }
        load.task.withLock { $0 = task }
        if load.isFinished { task.cancel() }  // cancelled before the task was recorded
        return load
    }

    var isFinished: Bool { completion.withLock { $0 == nil } }

    /// The completion, once: `nil` when it was taken already.
    private func takeCompletion() -> ImageLoaderCompletion? {
        completion.withLock { completion in
            defer { completion = nil }
            return completion
        }
    }

    private func finish(_ image: DecodedImage?, _ data: Data?, _ error: WebImageError?, _ metadata: DiskCacheMetadata?)
    {
        guard let completed = takeCompletion() else { return }
        completed(image, data, error, true, metadata)
    }

    func cancel() {
        guard let completed = takeCompletion() else { return }
        task.withLock { $0 }?.cancel()
        completed(nil, nil, .cancelled(url), true, nil)
    }
}

extension ProxyError {
    /// How a proxy source loader reports this error to the manager: a ``WebImageError`` whose
    /// code names it (`proxy.CODE`), so ``init(loaderError:)`` gets it back whole.
    func loaderError(for url: URL) -> WebImageError {
        if code == .cancelled { return .cancelled(url) }
        return WebImageError(.init(rawValue: Self.loaderCodePrefix + code.rawValue), url: url, message: message)
    }

    /// The error a proxy source loader reported; `nil` for any other ``WebImageError``.
    init?(loaderError error: WebImageError) {
        guard error.code.rawValue.hasPrefix(Self.loaderCodePrefix),
            let code = Code(rawValue: String(error.code.rawValue.dropFirst(Self.loaderCodePrefix.count)))
        else { return nil }
        self.init(code, error.message)
    }

    private static let loaderCodePrefix = "proxy."
}
