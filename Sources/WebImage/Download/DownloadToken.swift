import Foundation

/// One caller's interest in a download (SDWebImageDownloadToken). Cancel it to stop caring:
/// the caller's completion gets `cancelled`; the network load stops only when no caller is left.
public final class DownloadToken: Sendable, Hashable {
    /// The URL the caller asked for.
    public let url: URL
    let key: String
    private let downloaderReference: WeakDownloader

    init(url: URL, key: String, downloader: ImageDownloader) {
        self.url = url
        self.key = key
        downloaderReference = WeakDownloader(downloader: downloader)
    }

    /// Cancels this caller's interest (same as `downloader.cancel(token)`).
    public func cancel() { downloaderReference.downloader?.cancel(self) }

    public static func == (lhs: DownloadToken, rhs: DownloadToken) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

struct WeakDownloader: Sendable {
    weak let downloader: ImageDownloader?
}
