import Foundation
@_spi(WebImageInternals) import WebImageCoders
import WebImageHTTP

/// One caller's interest in a download (SDWebImageDownloadToken). Cancel it to stop caring:
/// the caller's completion gets `cancelled`; the network load stops only when no caller is left.
public final class DownloadToken: Sendable, Hashable {
    /// The URL the caller asked for.
    public let url: URL
    let key: ImageDownloadKey
    /// What this caller wants the bytes decoded into.
    let decoding: ImageDecodeRequest
    private let downloaderReference: WeakDownloader
    private let recorded = Protected<HTTPSession.Response?>(nil)

    /// The response head of the load this caller joined, once it arrived (SDWebImageDownloadToken's
    /// `response`): its status, `ETag`, `Last-Modified` and content type. Set before the caller's
    /// final completion runs.
    public var response: HTTPSession.Response? { recorded.withLock { $0 } }

    /// Records the load's response for this caller. Operations call it before completing; a custom
    /// ``DownloadOperationProtocol`` should too.
    public func recordResponse(_ response: HTTPSession.Response) { recorded.withLock { $0 = response } }

    init(url: URL, key: ImageDownloadKey, decoding: ImageDecodeRequest, downloader: ImageDownloader) {
        self.url = url
        self.key = key
        self.decoding = decoding
        downloaderReference = WeakDownloader(downloader: downloader)
    }

    /// Cancels this caller's interest (same as `downloader.cancel(token)`).
    public func cancel() { downloaderReference.downloader?.cancel(self) }

    /// Changes this caller's priority (same as `downloader.setPriority(priority, for: token)`).
    public func setPriority(_ priority: ImagePriority) {
        downloaderReference.downloader?.setPriority(priority, for: self)
    }

    public static func == (lhs: DownloadToken, rhs: DownloadToken) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

struct WeakDownloader: Sendable {
    weak let downloader: ImageDownloader?
}
