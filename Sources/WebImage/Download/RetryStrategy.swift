import Foundation
import WebImageHTTP

/// Decides whether a failed download is tried again, and after how long (Kingfisher's
/// `RetryStrategy`). Set one on ``ImageDownloader/Configuration/retryStrategy`` for every
/// download, or on ``ImageContext/retryStrategy`` for one load.
///
/// The downloader asks only about failures a later attempt might not repeat
/// (``DownloadRetryContext/isTransient``) of loads some caller still wants: never for a
/// cancelled load, a refused certificate, a 404 or undecodable data. Retries happen inside the
/// one network load every caller of the URL shares, so callers see one outcome. Called from the
/// download's task; must be thread-safe and quick.
public protocol ImageRetryStrategy: Sendable {
    /// How long to wait before the next attempt, or `nil` to give up and report `failure`.
    func retryDelay(for failure: DownloadRetryContext) -> Duration?
}

/// What a retry strategy knows about the attempt that just failed.
public struct DownloadRetryContext: Sendable {
    /// The URL being downloaded.
    public var url: URL
    /// Attempts made so far: 1 after the first failure.
    public var attempt: Int
    /// The response's status, when one arrived (408, 429, 500, 502, 503 or 504).
    public var statusCode: Int?
    /// The transport failure, when no response arrived (connect errors, resets, timeouts).
    public var error: HTTPSessionError?
    /// The server's `Retry-After` (seconds or an HTTP date), as a wait from now.
    public var retryAfter: Duration?

    /// A context; ``isTransient`` follows from the status or error.
    public init(
        url: URL,
        attempt: Int,
        statusCode: Int? = nil,
        error: HTTPSessionError? = nil,
        retryAfter: Duration? = nil
    ) {
        self.url = url
        self.attempt = attempt
        self.statusCode = statusCode
        self.error = error
        self.retryAfter = retryAfter
    }

    /// The statuses a server uses for "not now".
    public static let transientStatusCodes: Set<Int> = [408, 429, 500, 502, 503, 504]

    /// Whether a later attempt may succeed: a transient status, or a connection that failed,
    /// was reset or timed out.
    public var isTransient: Bool {
        if let error {
            switch error.code {
            case .timedOut, .cannotConnect, .connectionLost, .cannotFindHost, .networkError: return true
            default: return false
            }
        }
        return statusCode.map(Self.transientStatusCodes.contains) ?? false
    }

    /// A `Retry-After` value as a wait from `now`: delay-seconds or an HTTP date (RFC 9110
    /// §10.2.3); `nil` when it is neither.
    public static func retryAfter(_ value: String?, now: Date = Date()) -> Duration? {
        guard let value = value?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
        if value.utf8.allSatisfy({ (48...57).contains($0) }) {
            return .seconds(Int64(value) ?? Int64(Int32.max))
        }
        guard let date = HTTPDate.parse(value) else { return nil }
        return .milliseconds(Int64(max(0, date.timeIntervalSince(now)) * 1000))
    }
}

/// Exponential backoff with jitter for transient failures: the n-th retry waits about
/// `initialDelay × 2ⁿ⁻¹` (at most ``maximumDelay``), less up to ``jitter`` of it at random so
/// clients that failed together do not return together. A server's `Retry-After` is waited for
/// instead, when it is within ``maximumRetryAfter``; a longer one ends the retries (coming back
/// sooner than the server asked would only fail again).
public struct BackoffRetryStrategy: ImageRetryStrategy, Hashable {
    /// Retries after the first attempt. Default 2 (three attempts in all).
    public var maximumRetryCount: Int
    /// The first retry's wait. Default 500 ms.
    public var initialDelay: Duration
    /// The longest wait between attempts. Default 30 s.
    public var maximumDelay: Duration
    /// The longest `Retry-After` honoured. Default 60 s.
    public var maximumRetryAfter: Duration
    /// The share of each wait taken off at random, 0–1. Default 0.5.
    public var jitter: Double

    /// A strategy; every parameter has the default its property names.
    public init(
        maximumRetryCount: Int = 2,
        initialDelay: Duration = .milliseconds(500),
        maximumDelay: Duration = .seconds(30),
        maximumRetryAfter: Duration = .seconds(60),
        jitter: Double = 0.5
    ) {
        self.maximumRetryCount = maximumRetryCount
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
        self.maximumRetryAfter = maximumRetryAfter
        self.jitter = min(1, max(0, jitter))
    }

    public func retryDelay(for failure: DownloadRetryContext) -> Duration? {
        guard failure.isTransient, failure.attempt <= maximumRetryCount else { return nil }
        if let retryAfter = failure.retryAfter {
            return retryAfter <= maximumRetryAfter ? retryAfter : nil
        }
        var delay = initialDelay
        for _ in 1..<max(1, failure.attempt) where delay < maximumDelay { delay *= 2 }
        delay = min(delay, maximumDelay)
        return delay - delay * (jitter * Double.random(in: 0..<1))
    }
}
