import Foundation
@_spi(WebImageInternals) import WebImageCoders
import WebImageHTTP

/// A URL the manager remembers as failed, with why and until when.
public struct FailedURL: Sendable, Hashable {
    /// The URL that failed.
    public var url: URL
    /// The failure, as its load reported it.
    public var error: WebImageError
    /// When it failed.
    public var failedAt: Date
    /// When the manager tries it again without ``ImageOptions/retryFailed``.
    public var expiresAt: Date

    public static func == (lhs: FailedURL, rhs: FailedURL) -> Bool {
        lhs.url == rhs.url && lhs.failedAt == rhs.failedAt && lhs.expiresAt == rhs.expiresAt
            && lhs.error.code == rhs.error.code && lhs.error.message == rhs.error.message
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(url)
        hasher.combine(failedAt)
    }
}

/// How long the manager remembers a failure (SDWebImage #2587, #3589: a failed URL used to stay
/// failed for the life of the process). Network errors, 5xx, 408 and 429 are never remembered;
/// the loader decides (``ImageLoading/shouldBlockFailedURL(_:error:)``).
public struct FailedURLPolicy: Sendable, Hashable {
    /// For 404 and 410: the image is not there. Default: one hour.
    public var notFound: Duration
    /// For data that is not an image we can decode. Default: one day.
    public var undecodable: Duration
    /// For every other failure the loader blocks (other 4xx, bad URLs, TLS, redirects).
    /// Default: one hour.
    public var other: Duration

    /// The defaults above.
    public init(
        notFound: Duration = .seconds(3600),
        undecodable: Duration = .seconds(86_400),
        other: Duration = .seconds(3600)
    ) {
        self.notFound = notFound
        self.undecodable = undecodable
        self.other = other
    }

    /// How long `error` is remembered.
    public func duration(for error: WebImageError) -> Duration {
        if error.code == .invalidDownloadStatusCode, let status = error.statusCode, status == 404 || status == 410 {
            return notFound
        }
        return error.code == .badImageData ? undecodable : other
    }
}

/// The manager's failed URLs, each forgotten when its time is up. Thread-safe.
final class FailedURLList: Sendable {
    private let entries = Protected<[URL: FailedURL]>([:])
    let policy: FailedURLPolicy
    let now: @Sendable () -> Date

    init(policy: FailedURLPolicy, now: @escaping @Sendable () -> Date) {
        self.policy = policy
        self.now = now
    }

    /// Remembers that `url` failed with `error`, from now for the policy's duration.
    func insert(_ url: URL, error: WebImageError) {
        let failedAt = now()
        let seconds = policy.duration(for: error).components
        let interval = TimeInterval(seconds.seconds) + TimeInterval(seconds.attoseconds) / 1e18
        let entry = FailedURL(
            url: url,
            error: error,
            failedAt: failedAt,
            expiresAt: failedAt.addingTimeInterval(interval)
        )
        entries.withLock { $0[url] = entry }
    }

    /// The unexpired failure of `url`; an expired one is forgotten.
    func failure(of url: URL) -> FailedURL? {
        let now = now()
        return entries.withLock { entries in
            guard let entry = entries[url] else { return nil }
            guard entry.expiresAt > now else {
                entries[url] = nil
                return nil
            }
            return entry
        }
    }

    /// Every unexpired failure (expired ones are forgotten).
    var all: [FailedURL] {
        let now = now()
        return entries.withLock { entries in
            entries = entries.filter { $0.value.expiresAt > now }
            return Array(entries.values)
        }
    }

    func remove(_ url: URL) { entries.withLock { _ = $0.removeValue(forKey: url) } }

    func removeAll() { entries.withLock { $0.removeAll() } }
}

extension ImageManager {
    /// The error of a load refused because its URL failed before: it names that failure and
    /// when the URL will be tried again, and carries its status and causes.
    static func blackListed(_ failure: FailedURL) -> WebImageError {
        let until = HTTPDate.string(from: failure.expiresAt)
        return WebImageError(
            .blackListed,
            url: failure.url,
            message: "\(failure.url): failed before (\(failure.error.code.rawValue): \(failure.error.message)); "
                + "not tried again until \(until) without retryFailed",
            statusCode: failure.error.statusCode,
            underlying: failure.error.underlying,
            coderError: failure.error.coderError
        )
    }
}
