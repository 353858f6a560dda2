import Foundation
import WebImageHTTP

/// One network load of one URL and the callers waiting for it: the unit ``ImageDownloader``
/// queues and coalesces callers into (the seeds' `SDWebImageDownloaderOperation` protocol;
/// named as the standard library names `IteratorProtocol`, after its default conformer).
///
/// ``DownloadOperation`` is the default. To replace it, conform a class to this protocol and set
/// ``ImageDownloader/Configuration/operationFactory``. The downloader calls these methods from
/// any thread; implementations must be thread-safe and must call each caller's completion
/// exactly once with `finished == true`.
public protocol DownloadOperationProtocol: AnyObject, Sendable {
    /// The URL this operation loads.
    var url: URL { get }
    /// The callers' combined options; a waiting operation's priority is read from them.
    var options: ImageOptions { get }
    /// Whether every caller has had its final completion (or was cancelled).
    var isFinished: Bool { get }
    /// Where the operation waits in the downloader's queue. Default: from ``options``.
    var priority: ImagePriority { get }

    /// Changes one caller's priority (``DownloadToken/setPriority(_:)``). Default: ignored.
    func setPriority(_ priority: ImagePriority, for token: DownloadToken)

    /// Adds a caller. Returns `false` when the operation has already finished, so the downloader
    /// starts a new one.
    func addHandlers(
        for token: DownloadToken,
        options: ImageOptions,
        progress: ImageDownloader.ProgressHandler?,
        completed: @escaping ImageDownloader.CompletedHandler
    ) -> Bool

    /// Removes one caller and calls its completion with `cancelled`. Returns `true` when no caller
    /// is left; the operation has then stopped its network load.
    func cancelHandlers(for token: DownloadToken) -> Bool

    /// Cancels the load; every remaining caller gets `cancelled`.
    func cancel()

    /// Runs the load with the downloader's session, configuration and hooks. Must call
    /// `onFinish` exactly once, after the last completion was delivered (or at once when the
    /// operation was cancelled before it started), so the downloader can start the next load.
    func start(in environment: ImageDownloadEnvironment, onFinish: @escaping @Sendable () -> Void)
}

/// The earlier name of ``DownloadOperationProtocol``.
@available(*, deprecated, renamed: "DownloadOperationProtocol")
public typealias ImageDownloadOperation = DownloadOperationProtocol

extension DownloadOperationProtocol {
    /// ``ImagePriority/init(_:)`` of ``options``.
    public var priority: ImagePriority { ImagePriority(options) }

    /// Ignores the change: the operation keeps the priority of its options.
    public func setPriority(_ priority: ImagePriority, for token: DownloadToken) {}
}

/// What an ``DownloadOperationProtocol`` runs with: the downloader's session, configuration and
/// request/response hooks at the moment the operation starts.
public struct ImageDownloadEnvironment: Sendable {
    /// The session to load with (the permissive one for `allowInvalidSSLCertificates`).
    public var session: HTTPSession
    /// The downloader's configuration.
    public var configuration: ImageDownloader.Configuration
    /// Headers every request sends (``ImageDownloader/setValue(_:forHTTPHeaderField:)``).
    public var headers: HTTPFields
    /// ``ImageDownloader/requestModifier``.
    public var requestModifier: (@Sendable (HTTPSession.Request) -> HTTPSession.Request?)?
    /// ``ImageDownloader/responseModifier``.
    public var responseModifier: (@Sendable (HTTPSession.Response) -> HTTPSession.Response?)?
    /// ``ImageDownloader/decryptor``.
    public var decryptor: (@Sendable (Data, HTTPSession.Response) -> Data?)?
    /// Publishes a lifecycle event as a notification and on ``ImageDownloader/downloadEvents``.
    public var publish: @Sendable (ImageDownloaderEvent) -> Void
    /// Where bytes of downloads that stopped part-way are kept for the next download of the same
    /// URL (``ImageDownloader/resumableData``); `nil`: none kept.
    public var resumableData: ResumableDataStore?

    /// An environment; only the session and configuration are required.
    public init(
        session: HTTPSession,
        configuration: ImageDownloader.Configuration,
        headers: HTTPFields = [:],
        requestModifier: (@Sendable (HTTPSession.Request) -> HTTPSession.Request?)? = nil,
        responseModifier: (@Sendable (HTTPSession.Response) -> HTTPSession.Response?)? = nil,
        decryptor: (@Sendable (Data, HTTPSession.Response) -> Data?)? = nil,
        publish: @escaping @Sendable (ImageDownloaderEvent) -> Void = { _ in },
        resumableData: ResumableDataStore? = nil
    ) {
        self.resumableData = resumableData
        self.session = session
        self.configuration = configuration
        self.headers = headers
        self.requestModifier = requestModifier
        self.responseModifier = responseModifier
        self.decryptor = decryptor
        self.publish = publish
    }
}
