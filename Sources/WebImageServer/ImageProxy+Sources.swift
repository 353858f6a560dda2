import Foundation
import WebImage
import WebImageHTTP

extension ImageProxy {
    /// A manager for `configuration`: originals kept on disk in `cacheDirectory` (its memory
    /// cache is off: results are cached in front of the proxy, and decodes are kept by the
    /// proxy's own ``ImageProxyConfiguration/decodedSourceCacheSize``), at most
    /// ``ImageProxyConfiguration/maxRedirects`` redirects each checked against the source rules,
    /// the source headers, the download timeout and size limit, no cookies.
    /// `cacheSize` bounds the disk cache in bytes (`nil`: no limit); expired and surplus
    /// originals are removed every 10 minutes.
    public static func makeManager(
        configuration: ImageProxyConfiguration,
        cacheDirectory: URL,
        cacheSize: Int64? = nil
    ) -> ImageManager {
        var cacheConfiguration = ImageCache.Configuration()
        cacheConfiguration.cachesImagesInMemory = false
        cacheConfiguration.cleanupInterval = .seconds(600)  // a proxy writes new originals all day
        cacheConfiguration.cleanupInterval = .seconds(600)  // a proxy writes new originals all day
        if let cacheSize { cacheConfiguration.disk.maxSize = Int(cacheSize) }
        let cache = ImageCache(directory: cacheDirectory, configuration: cacheConfiguration)
        var session = HTTPSession.Configuration()
        session.redirectPolicy = .init(maximumCount: configuration.limits.maxRedirects)
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
        session.postsTaskNotifications = false  // nothing in the proxy observes them
        session.connectTimeout = configuration.limits.downloadTimeout
        session.readTimeout = configuration.limits.downloadTimeout
        var downloader = ImageDownloader.Configuration()
        downloader.downloadTimeout = configuration.limits.downloadTimeout
        downloader.maximumDownloadDuration = configuration.limits.downloadTimeout
        downloader.maximumDownloadSize = configuration.limits.maxSourceFileSize
        downloader.decodesImages = false
        downloader.postsNotifications = false  // nothing in the proxy observes them
        let loader = ImageDownloader(configuration: downloader, session: HTTPSession(configuration: session))
        return ImageManager(cache: cache, loader: loader, additionalLoaders: sourceLoaders(configuration))
    }

    /// The loaders of the sources that are not http(s): `s3://` when S3 is configured,
    /// `local://` when a local root is.
    static func sourceLoaders(_ configuration: ImageProxyConfiguration) -> [any ImageLoading] {
        let limit = configuration.limits.maxSourceFileSize
        var loaders: [any ImageLoading] = []
        if let s3 = configuration.s3 {
            let source = S3Source(configuration: s3, timeout: configuration.limits.downloadTimeout)
            loaders.append(ProxySourceLoader.s3(source, limit: limit))
        }
        if let root = configuration.localRoot { loaders.append(ProxySourceLoader.local(root, limit: limit)) }
        return loaders
    }

    /// The source's bytes: a local file, or from the disk cache or the network.
    func fetch(_ url: URL) async throws(ProxyError) -> Data {
        try await fetchWithDate(url).data
    }

    /// The source's bytes and, with ``ImageProxyConfiguration/usesLastModified``, its
    /// `Last-Modified` (a local file's modification time; an HTTP source's as its response or
    /// the disk entry says).
    func fetchWithDate(_ url: URL) async throws(ProxyError) -> (data: Data, lastModified: String?) {
        let result: ImageLoadResult
        do {
            result = try await manager.loadImage(with: url, options: [.avoidDecodeImage, .retryFailed])
        } catch {
            throw Self.proxyError(error)
        }
        guard let data = result.data, !data.isEmpty else {
            throw ProxyError(.notAnImage, "the source sent no bytes")
        }
        let tier: ImageCacheTier =
            switch result.cacheType {
            case .memory: .memory
            case .disk, .all: .disk
            case .none: .network
            }
        metrics.loadedSource(bytes: data.count, from: tier)
        return (data, configuration.usesLastModified ? result.metadata?.lastModified : nil)
    }

    static func proxyError(_ error: WebImageError) -> ProxyError {
        if let reported = ProxyError(loaderError: error) { return reported }
        let http = error.underlying?.code
        if error.code == .cancelled || http == .cancelled { return .cancelled }
        if error.code == .invalidDownloadStatusCode, let status = error.statusCode, status == 404 || status == 410 {
            return ProxyError(.sourceNotFound, "the source answered \(status)")
        }
        if http == .timedOut {
            return ProxyError(.timedOut, "the source did not answer in time")
        }
        if http == .connectionNotAllowed, let message = error.underlying?.message {
            return .sourceNotAllowed(message)
        }
        if http == .redirectRefused, let message = error.underlying?.message {
            return .sourceNotAllowed("a redirect was refused: \(message)")
        }
        switch error.code {
        case .downloadTooLarge:
            return ProxyError(.limitExceeded, "the source is over --max-src-file-size")
        case .badImageData, .invalidDownloadContentType:
            return ProxyError(.notAnImage, "the source is not an image")
        case .invalidDownloadStatusCode:
            return ProxyError(
                .sourceFailed,
                "the source answered \(error.statusCode.map(String.init) ?? "an error")"
            )
        default:
            return ProxyError(.sourceFailed, "the source failed: \(error.message)")
        }
    }

    /// A source's bytes and what is known of them.
    struct FetchedSource: Sendable {
        var data: Data
        var header: ImageHeader
        /// The failure of the source the fallback image stands in for; `nil`: the source's own.
        var fallbackCause: ProxyError?
        /// The fallback image stands in for the source.
        var fellBack: Bool { fallbackCause != nil }
        /// The source's `Last-Modified` (with ``ImageProxyConfiguration/usesLastModified``).
        var lastModified: String?
    }

    /// The source's bytes and header; the fallback image's when the source cannot be fetched or
    /// read and the server has one.
    func source(_ url: URL) async throws(ProxyError) -> FetchedSource {
        do throws(ProxyError) {
            let (data, lastModified) = try await fetchWithDate(url)
            guard let header = ImageHeader(data) else {
                throw ProxyError(.notAnImage, "the source is not an image we can read")
            }
            return FetchedSource(data: data, header: header, lastModified: lastModified)
        } catch  where configuration.fallbackImage != nil && Self.fallbackCovers(error) {
            let data = try await fallbackImageData()
            guard let header = ImageHeader(data) else {
                throw ProxyError(.fallbackFailed, "the fallback image is not an image")
            }
            return FetchedSource(data: data, header: header, fallbackCause: error)
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
}
