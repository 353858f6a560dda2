import Foundation
import WebImage
import WebImageHTTP

extension ImageProxy {
    /// A manager for `configuration`: originals kept on disk in `cacheDirectory` (its memory
    /// cache is off: results are cached in front of the proxy, and decodes are kept by the
    /// proxy's own ``ImageProxyConfiguration/decodedSourceCacheSize``), at most
    /// ``ImageProxyConfiguration/maxRedirects`` redirects each checked against the source rules,
    /// the source headers, the download timeout and size limit, no cookies.
    /// `cacheSize` bounds the disk cache in bytes (`nil`: no limit).
    public static func makeManager(
        configuration: ImageProxyConfiguration,
        cacheDirectory: URL,
        cacheSize: Int64? = nil
    ) -> ImageManager {
        var cacheConfiguration = ImageCache.Configuration()
        cacheConfiguration.cachesImagesInMemory = false
        if let cacheSize { cacheConfiguration.disk.maxSize = Int(cacheSize) }
        let cache = ImageCache(directory: cacheDirectory, configuration: cacheConfiguration)
        var session = HTTPSession.Configuration()
        session.redirectPolicy = .init(maximumCount: configuration.maxRedirects)
        for (name, value) in configuration.sourceHeaders {
            if let field = HTTPField.Name(name) { session.defaultHeaders[field] = value }
        }
        let policy = configuration.sourcePolicy
        session.redirectValidator = { target in
            do throws(ProxyError) {
                try policy.check(target.absoluteString)
                return nil
            } catch {
                return error.message
            }
        }
        // DNS rebinding: a name is judged again by the address its connection reached, before
        // a request is written on it; the connection is closed when that address is refused.
        session.connectionValidator = { address in policy.refusal(connectingTo: address) }
        session.cookieStore = nil
        session.connectTimeout = configuration.downloadTimeout
        session.readTimeout = configuration.downloadTimeout
        var downloader = ImageDownloader.Configuration()
        downloader.downloadTimeout = configuration.downloadTimeout
        downloader.maximumDownloadDuration = configuration.downloadTimeout
        downloader.maximumDownloadSize = configuration.maxSourceFileSize
        downloader.decodesImages = false
        downloader.postsNotifications = false  // nothing in the proxy observes them
        let loader = ImageDownloader(configuration: downloader, session: HTTPSession(configuration: session))
        return ImageManager(cache: cache, loader: loader)
    }

    /// The source's bytes: a local file, or from the disk cache or the network.
    func fetch(_ url: URL) async throws(ProxyError) -> Data {
        try await fetchWithDate(url).data
    }

    /// The source's bytes and, with ``ImageProxyConfiguration/usesLastModified``, its
    /// `Last-Modified` (a local file's modification time; an HTTP source's as the disk cache
    /// keeps it, so the fetch waits for that write).
    func fetchWithDate(_ url: URL) async throws(ProxyError) -> (data: Data, lastModified: String?) {
        if url.scheme?.lowercased() == "local", let root = configuration.localRoot {
            let (data, modified) = try await root.read(url, limit: configuration.maxSourceFileSize)
            metrics.loadedSource(bytes: data.count, from: .disk)
            return (data, modified.map(HTTPDate.string(from:)))
        }
        if url.scheme?.lowercased() == "s3", let s3 { return try await fetchObject(url, from: s3) }
        let result: ImageLoadResult
        do {
            var options: ImageOptions = [.avoidDecodeImage, .retryFailed]
            if configuration.usesLastModified { options.insert(.waitStoreCache) }
            result = try await manager.loadImage(with: url, options: options)
        } catch {
            throw Self.proxyError(error)
        }
        guard let data = result.data, !data.isEmpty else {
            throw ProxyError(status: 422, code: .notAnImage, message: "the source sent no bytes")
        }
        let tier: ImageCacheTier =
            switch result.cacheType {
            case .memory: .memory
            case .disk, .all: .disk
            case .none: .network
            }
        metrics.loadedSource(bytes: data.count, from: tier)
        guard configuration.usesLastModified else { return (data, nil) }
        let entry = await (manager.imageCache as? ImageCache)?.diskEntry(forKey: manager.cacheKey(for: url))
        return (data, entry?.metadata.lastModified)
    }

    static func proxyError(_ error: WebImageError) -> ProxyError {
        let http = error.underlying?.code
        if error.code == .cancelled || http == .cancelled { return .cancelled }
        if error.code == .invalidDownloadStatusCode, let status = error.statusCode, status == 404 || status == 410 {
            return ProxyError(status: 404, code: .sourceNotFound, message: "the source answered \(status)")
        }
        if http == .timedOut {
            return ProxyError(status: 504, code: .timedOut, message: "the source did not answer in time")
        }
        if http == .connectionNotAllowed, let message = error.underlying?.message {
            return .sourceNotAllowed(message)
        }
        if http == .redirectRefused, let message = error.underlying?.message {
            return .sourceNotAllowed("a redirect was refused: \(message)")
        }
        switch error.code {
        case .downloadTooLarge:
            return ProxyError(status: 422, code: .limitExceeded, message: "the source is over --max-src-file-size")
        case .badImageData, .invalidDownloadContentType:
            return ProxyError(status: 422, code: .notAnImage, message: "the source is not an image")
        case .invalidDownloadStatusCode:
            return ProxyError(
                status: 502,
                code: .sourceFailed,
                message: "the source answered \(error.statusCode.map(String.init) ?? "an error")"
            )
        default:
            return ProxyError(status: 502, code: .sourceFailed, message: "the source failed: \(error.message)")
        }
    }

    /// A source's bytes and what is known of them.
    struct FetchedSource: Sendable {
        var data: Data
        var header: ImageHeader
        /// The fallback image stands in for the source.
        var fellBack = false
        /// The source's `Last-Modified` (with ``ImageProxyConfiguration/usesLastModified``).
        var lastModified: String?
    }

    /// The source's bytes and header; the fallback image's when the source cannot be fetched or
    /// read and the server has one.
    func source(_ url: URL) async throws(ProxyError) -> FetchedSource {
        do throws(ProxyError) {
            let (data, lastModified) = try await fetchWithDate(url)
            guard let header = ImageHeader(data) else {
                throw ProxyError(status: 422, code: .notAnImage, message: "the source is not an image we can read")
            }
            return FetchedSource(data: data, header: header, lastModified: lastModified)
        } catch  where configuration.fallbackImage != nil && Self.fallbackCovers(error) {
            let data = try await fallbackImageData()
            guard let header = ImageHeader(data) else {
                throw ProxyError(status: 500, code: .fallbackFailed, message: "the fallback image is not an image")
            }
            return FetchedSource(data: data, header: header, fellBack: true)
        }
    }

    /// The source failures the fallback image stands in for: not found, failed, too slow, too
    /// large or not an image (not refusals by the source rules, nor cancellations).
    static func fallbackCovers(_ error: ProxyError) -> Bool {
        switch error.code {
        case .sourceNotFound, .sourceFailed, .timedOut, .notAnImage, .limitExceeded: true
        default: false
        }
    }

    /// An S3 object, kept in the originals cache with its ETag and revalidated with
    /// `If-None-Match` at each use (a 304 moves no body).
    private func fetchObject(
        _ url: URL,
        from s3: S3Source
    ) async throws(ProxyError) -> (data: Data, lastModified: String?) {
        let cache = manager.imageCache as? ImageCache
        let key = url.absoluteString
        var kept: (data: Data, metadata: DiskCacheMetadata)?
        if let cache { kept = await Self.keptObject(cache, key: key) }
        switch try await s3.fetch(url, limit: configuration.maxSourceFileSize, ifNoneMatch: kept?.metadata.etag) {
        case .notModified:
            guard let kept else {
                throw ProxyError(status: 502, code: .sourceFailed, message: "S3 answered 304 to an unconditional GET")
            }
            metrics.loadedSource(bytes: kept.data.count, from: .disk)
            return (kept.data, kept.metadata.lastModified)
        case .object(let data, let etag, let lastModified):
            metrics.loadedSource(bytes: data.count, from: .network)
            if let etag {
                let metadata = DiskCacheMetadata(etag: etag, lastModified: lastModified)
                cache?.store(nil, data: data, forKey: key, metadata: metadata, cacheType: .disk, completion: nil)
            }
            return (data, lastModified)
        }
    }

    /// The bytes and validators kept for `key`, read on the disk-reading queue; `nil` without an
    /// ETag to revalidate with.
    private static func keptObject(_ cache: ImageCache, key: String) async -> (data: Data, metadata: DiskCacheMetadata)?
    {
        guard let entry = await cache.diskEntry(forKey: key), entry.metadata.etag != nil else { return nil }
        let data: Data? = await withCheckedContinuation { continuation in
            ImageWorkQueue.diskReading.enqueue { continuation.resume(returning: cache.diskImageData(forKey: key)) }
        }
        return data.map { ($0, entry.metadata) }
    }
}
