import Foundation
import Logging
import WebImageCoders
import WebImageHTTP

extension ImageDownloader {
    /// The order in which waiting downloads start.
    public enum ExecutionOrder: Sendable, Hashable {
        /// Oldest first (the default).
        case fifo
        /// Newest first.
        case lifo
    }

    /// The seeds' SDWebImageDownloaderConfig.
    public struct Configuration: Sendable {
        /// Network loads running at once. Default 6.
        public var maxConcurrentDownloads = 6
        /// How long a download may go without receiving anything (an idle timeout, as
        /// NSURLRequest's `timeoutInterval` in the seeds): a large image on a slow but steady link
        /// loads; a server that stops sending fails with a timeout. Zero (or less) means the
        /// default, 15 s. Enforced by the downloader's own session (its read and connect
        /// timeouts); a session passed in keeps its own read timeout.
        public var downloadTimeout: Duration = .seconds(15)
        /// How long a whole download may take, however steadily the bytes arrive; `nil`
        /// (default): no overall deadline, only ``downloadTimeout``.
        public var maximumDownloadDuration: Duration?

        /// ``downloadTimeout``, with zero (or less) meaning the default.
        var effectiveDownloadTimeout: Duration { downloadTimeout > .zero ? downloadTimeout : .seconds(15) }
        /// Which waiting download starts first. Default `.fifo`.
        public var executionOrder: ExecutionOrder = .fifo
        /// Progress callbacks are at least this far apart (the final one always comes).
        /// Default 100 ms.
        public var minimumProgressInterval: Duration = .milliseconds(100)
        /// The most bytes one download may have. A longer response stops being read there and its
        /// callers get ``WebImageError/Code/downloadTooLarge`` (a `Content-Length` over it fails
        /// before the body is read). A request modifier may change it per load
        /// (`HTTPSession.Request.maximumBodySize`). `nil`: no limit. Default 128 MiB.
        public var maximumDownloadSize: Int64? = 128 * 1024 * 1024
        /// Decode downloaded data (else completions carry data only). Default `true`.
        public var decodesImages = true
        /// Credentials for servers that ask for HTTP basic authentication.
        public var credential: HTTPCredential?
        /// The response cache of the session the downloader makes for itself, which loads with
        /// ``ImageOptions/useURLCache`` read and fill (SDWebImage's `NSURLCache`). Default `nil`:
        /// none. A session passed to the downloader keeps its own.
        public var urlCache: HTTPResponseCache?
        /// Statuses accepted as success. Default 200–299. Any other ends the transfer at the
        /// response head (`invalidDownloadStatusCode`); a 304 is `cacheNotModified`, and a redirect
        /// the session did not follow is an error naming its target.
        public var acceptableStatusCodes: Set<Int> = Set(200..<300)
        /// Content types accepted; `nil` (default) accepts any.
        public var acceptableContentTypes: Set<String>?
        /// Headers every download sends. By default `Accept` names exactly the media types the
        /// shared coders decode when the configuration is made
        /// (`ImageCodersManager.acceptHeaderValue`): a negotiating server or CDN never picks a
        /// format that would fail to decode (and blacklist the URL).
        public var headers: HTTPFields = [.accept: ImageCodersManager.shared.acceptHeaderValue]

        /// Makes the operation for a new network load: `(url, first caller's options, context)`.
        /// Default: ``DownloadOperation``. Replace it to run loads your own way.
        public var operationFactory: @Sendable (URL, ImageOptions, ImageContext) -> any DownloadOperationProtocol = {
            DownloadOperation(url: $0, options: $1, context: $2)
        }

        /// Whether and when a download that failed transiently (connect errors, resets,
        /// timeouts, 408, 429, 500, 502, 503, 504) is sent again, e.g. ``BackoffRetryStrategy``;
        /// a load's ``ImageContext/retryStrategy`` takes its place. A transfer cut after some
        /// bytes resumes with `Range`/`If-Range` when the server allows it. Default `nil`: no
        /// retries.
        public var retryStrategy: (any ImageRetryStrategy)?

        /// Whether each ``ImageDownloaderEvent`` is also posted to `NotificationCenter.default`
        /// (SDWebImage's download notifications, `Notification.Name.imageDownloadStart`
        /// and the others). Default `true`. Turn it off where nobody observes them: four posts a
        /// download are about 6 % of a bytes-only load's time. ``ImageDownloader/downloadEvents``
        /// streams the events either way. The session the downloader makes for itself (no
        /// `session` passed to ``ImageDownloader/init(configuration:session:)``) posts its task
        /// notifications on the same terms (`HTTPSession.Configuration.postsTaskNotifications`).
        public var postsNotifications = true

        /// Receives each load's start and end at `.debug` and failures at `.notice`. Default: none.
        public var logger = Logger.quiet("swift-web-image.downloader")

        /// The default configuration.
        public init() {}

        /// The default configuration.
        public static let `default` = Configuration()
    }
}
