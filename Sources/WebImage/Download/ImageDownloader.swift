import Foundation
@_spi(WebImageInternals) import WebImageCoders
import WebImageHTTP

/// Downloads images (SDWebImageDownloader): one network load per URL however many callers want
/// it, at most `maxConcurrentDownloads` at once, each caller free to cancel only its own interest.
///
/// ```swift
/// let token = ImageDownloader.shared.download(with: url, progress: { received, expected, _ in … }) {
///     image, data, error, finished in …
/// }
/// token?.cancel()
/// let result = try await ImageDownloader.shared.image(with: url)
/// ```
///
/// **Coalescing.** Loads of the same URL with the same `allowInvalidSSLCertificates`,
/// `handleCookies` and cached validators, and no request modifier or retry strategy of their
/// own, share one network load; any of those differing makes a separate load. Decoding is a
/// stage after the load, per caller: callers asking for different thumbnail sizes, colour
/// policies, `scaleDownLargeImages`, `decodeFirstFrameOnly` or `avoidDecodeImage` share the
/// request and get their own image, one decode for each distinct setting. A caller joining a
/// load in flight gets its progress and completion. After a load completes, the next call
/// starts a new one.
///
/// Handlers run on the loading task (never on an event loop), outside the downloader's lock.
/// Releasing the downloader cancels its downloads, as SDWebImageDownloader does: every caller
/// still waiting gets `cancelled`, none is left without its completion.
public final class ImageDownloader: Sendable {
    /// `(receivedBytes, expectedBytes, url)`; expected is 0 when unknown.
    public typealias ProgressHandler = @Sendable (Int64, Int64, URL) -> Void
    /// `(image, data, error, finished)`; called once per caller with `finished == true`.
    public typealias CompletedHandler = @Sendable (DecodedImage?, Data?, WebImageError?, Bool) -> Void

    /// A process-wide downloader with the default configuration and the shared HTTP session.
    public static let shared = ImageDownloader()

    /// The configuration the downloader was made with.
    public let configuration: Configuration
    /// The session loads go through.
    public let session: HTTPSession
    /// Made on first use, for loads with `allowInvalidSSLCertificates`.
    private let permissiveSession = Protected<HTTPSession?>(nil)

    private struct State {
        var operations: [ImageDownloadKey: Entry] = [:]
        var waiting: [Entry] = []
        var running = 0
        var suspended = false
        var nextID: UInt64 = 1
    }

    private let state = Protected(State())
    private let hooks: Protected<Hooks>
    let eventHub = EventHub<ImageDownloaderEvent>()
    /// Bytes of downloads that stopped part-way, continued by the next download of the same URL
    /// with `Range`/`If-Range` when its server allows (32 MiB, 10 minutes).
    public let resumableData = ResumableDataStore()

    /// Downloader-wide request/response hooks (SDWebImageDownloader's modifiers and decryptor).
    struct Hooks: Sendable {
        var headers: HTTPFields
        var requestModifier: (@Sendable (HTTPSession.Request) -> HTTPSession.Request?)?
        var responseModifier: (@Sendable (HTTPSession.Response) -> HTTPSession.Response?)?
        var decryptor: (@Sendable (Data, HTTPSession.Response) -> Data?)?
    }

    /// A downloader; `session` defaults to one made for it (with the configuration's credential,
    /// and its download timeout as the read timeout: the longest wait for a byte).
    public init(configuration: Configuration = .default, session: HTTPSession? = nil) {
        self.configuration = configuration
        hooks = Protected(Hooks(headers: configuration.headers))
        if let session {
            self.session = session
        } else {
            var sessionConfiguration = HTTPSession.Configuration()
            sessionConfiguration.credential = configuration.credential
            sessionConfiguration.urlCache = configuration.urlCache
            // Cookies are sent and stored only for loads with `handleCookies`.
            sessionConfiguration.cookieStore = .shared
            sessionConfiguration.maximumConnectionsPerHost = max(configuration.maxConcurrentDownloads, 1)
            sessionConfiguration.postsTaskNotifications = configuration.postsNotifications
            // The download timeout is the time allowed without a byte: the read timeout (and no
            // longer to connect).
            sessionConfiguration.readTimeout = configuration.effectiveDownloadTimeout
            sessionConfiguration.connectTimeout = min(
                sessionConfiguration.connectTimeout,
                configuration.effectiveDownloadTimeout
            )
            self.session = HTTPSession(configuration: sessionConfiguration)
        }
    }

    deinit {
        // Loads waiting for a start would never get one (starting holds the downloader weakly).
        cancelAllDownloads()
    }

    /// Starts (or joins) the download of `url`. Returns `nil` when `url` is missing or not
    /// http(s); `completed` has then been called with `invalidURL`. A caller joins a load of the
    /// same URL only while its result is not in yet.
    @discardableResult
    public func download(
        with url: URL?,
        options: ImageOptions = [],
        context: ImageContext? = nil,
        progress: ProgressHandler? = nil,
        completed: @escaping CompletedHandler
    ) -> DownloadToken? {
        download(with: url, options: options, context: context, progress: progress) { image, data, error, finished, _ in
            completed(image, data, error, finished)
        }
    }

    /// ``download(with:options:context:progress:completed:)-(URL?,_,_,_,_)`` whose completion also gets the
    /// response head of the load the caller joined (its validators and content type), however
    /// soon the completion runs: even while the call has not returned its token yet.
    @discardableResult
    func download(
        with url: URL?,
        options: ImageOptions = [],
        context: ImageContext? = nil,
        progress: ProgressHandler? = nil,
        completedWithResponse:
            @escaping @Sendable (
                DecodedImage?, Data?, WebImageError?, Bool, HTTPSession.Response?
            ) -> Void
    ) -> DownloadToken? {
        let completed: CompletedHandler = { image, data, error, finished in
            completedWithResponse(image, data, error, finished, nil)
        }
        guard let url, url.httpValidationFailure == nil else {
            completed(nil, nil, .invalidURL(url?.absoluteString ?? "", reason: url?.httpValidationFailure), true)
            return nil
        }
        let context = context ?? ImageContext()
        let (token, outcome) = state.withLock { state -> (DownloadToken, JoinOutcome) in
            let id = state.nextID
            state.nextID += 1
            let key = ImageDownloadKey(url: url, options: options, context: context, unshareable: id)
            let token = DownloadToken(
                url: url,
                key: key,
                decoding: ImageDecodeRequest(options: options, context: context),
                downloader: self
            )
            // The operation records the response in the token before it completes the caller.
            let completed: CompletedHandler = { [token] image, data, error, finished in
                completedWithResponse(image, data, error, finished, finished ? token.response : nil)
            }
            if let existing = state.operations[key],
                existing.operation.addHandlers(for: token, options: options, progress: progress, completed: completed)
            {
                return (token, .joined(existing.operation))
            }
            let entry = Entry(
                key: key,
                sequence: id,
                operation: configuration.operationFactory(url, options, context)
            )
            guard entry.operation.addHandlers(for: token, options: options, progress: progress, completed: completed)
            else { return (token, .refused) }
            state.operations[key] = entry
            state.waiting.append(entry)
            return (token, .queued(entry.operation))
        }
        // The caller's priority reaches the operation outside the downloader's lock (a custom
        // operation's code never runs under it); the queue reads it when a slot frees.
        switch outcome {
        case .joined(let operation), .queued(let operation):
            if let priority = context.priority { operation.setPriority(priority, for: token) }
            if let info = context.imageInfoHandler, let operation = operation as? DownloadOperation {
                operation.addInfoHandler(for: token, info)
            }
        case .refused: break
        }
        switch outcome {
        case .joined: break
        case .queued:
            // Start in a Swift task of its own: `download` never runs operations, progress
            // handlers or notification observers on the caller's stack (callers may hold their
            // own locks). A task, not a dispatch block: the operation's HTTP task starts on the
            // same pool, so one thread pool is woken instead of two.
            Task { [weak self] in self?.startWaiting() }
        case .refused:
            completed(
                nil,
                nil,
                WebImageError(
                    .invalidDownloadOperation,
                    url: url,
                    message: "\(url): the download operation refused its first caller"
                ),
                true
            )
            return nil
        }
        return token
    }

    private enum JoinOutcome {
        case joined(any DownloadOperationProtocol)
        case queued(any DownloadOperationProtocol)
        case refused
    }

    /// Cancels one caller's interest: its completion gets `cancelled`; the load stops when it was
    /// the last caller.
    public func cancel(_ token: DownloadToken) {
        guard let entry = state.withLock({ $0.operations[token.key] }) else { return }
        if entry.operation.cancelHandlers(for: token) {
            state.withLock { state in
                if state.operations[token.key] === entry { state.operations[token.key] = nil }
                state.waiting.removeAll { $0 === entry }
            }
        }
    }

    /// Changes one caller's priority. A download still waiting for a slot moves in the queue (it
    /// runs at the highest priority of its callers); a running one is not affected.
    public func setPriority(_ priority: ImagePriority, for token: DownloadToken) {
        state.withLock { $0.operations[token.key] }?.operation.setPriority(priority, for: token)
    }

    /// Cancels every download; every caller gets `cancelled`.
    public func cancelAllDownloads() {
        let operations = state.withLock { state in
            defer {
                state.operations.removeAll()
                state.waiting.removeAll()
            }
            return Array(state.operations.values)
        }
        for entry in operations { entry.operation.cancel() }
    }

    /// Sets (or with `nil` removes) a header every download sends from now on. A `field` that
    /// is not a valid HTTP field name (empty, or with a space, colon or control character) is
    /// ignored: no request could carry it.
    public func setValue(_ value: String?, forHTTPHeaderField field: String) {
        guard let name = HTTPField.Name(field) else { return }
        hooks.withLock { $0.headers[name] = value }
    }

    /// The value of a header every download sends (repeated fields joined with commas); `nil`
    /// when it is not set or `field` is not a valid field name.
    public func value(forHTTPHeaderField field: String) -> String? {
        guard let name = HTTPField.Name(field) else { return nil }
        return hooks.withLock { $0.headers[name] }
    }

    /// Changes each request before it is sent (after the context's modifier), or returns `nil` to
    /// cancel that load (its callers get `cancelled`).
    public var requestModifier: (@Sendable (HTTPSession.Request) -> HTTPSession.Request?)? {
        get { hooks.withLock { $0.requestModifier } }
        set { hooks.withLock { $0.requestModifier = newValue } }
    }

    /// Changes each response head, or returns `nil` to reject it (`invalidDownloadResponse`).
    public var responseModifier: (@Sendable (HTTPSession.Response) -> HTTPSession.Response?)? {
        get { hooks.withLock { $0.responseModifier } }
        set { hooks.withLock { $0.responseModifier = newValue } }
    }

    /// Turns the received bytes into image data before decoding (`nil`: `badImageData`).
    /// Progressive decoding is off while a decryptor is set.
    public var decryptor: (@Sendable (Data, HTTPSession.Response) -> Data?)? {
        get { hooks.withLock { $0.decryptor } }
        set { hooks.withLock { $0.decryptor = newValue } }
    }

    /// While suspended, no waiting download starts (running ones go on).
    public func setSuspended(_ suspended: Bool) {
        state.withLock { $0.suspended = suspended }
        if !suspended { startWaiting() }
    }

    /// Whether waiting downloads are held back.
    public var isSuspended: Bool { state.withLock { $0.suspended } }

    /// Downloads running or waiting.
    public var currentDownloadCount: Int { state.withLock { $0.operations.count } }

    /// Callers waiting for downloads of `url` by the default operation (for tests: whether a
    /// load has joined).
    package func waitingCallerCount(for url: URL) -> Int {
        let operations = state.withLock { state in
            state.operations.values.filter { $0.key.url == url.absoluteString }.map(\.operation)
        }
        return operations.reduce(0) { $0 + (($1 as? DownloadOperation)?.waitingCallerCount ?? 0) }
    }

    /// Downloads `url` and returns the image (and data). Cancelling the Swift task cancels this
    /// caller's interest.
    public func image(
        with url: URL?,
        options: ImageOptions = [],
        context: ImageContext? = nil
    )
        async throws(WebImageError) -> ImageDownloadResult
    {
        let result: Result<ImageDownloadResult, WebImageError> = await withCancellableCallback { continuation in
            download(with: url, options: options, context: context) { image, data, error, finished in
                guard finished else { return }
                if let error {
                    continuation.resume(returning: .failure(error))
                } else {
                    continuation.resume(returning: .success(ImageDownloadResult(image: image, data: data ?? Data())))
                }
            }
        } cancel: { token in
            token.cancel()
        }
        return try result.get()
    }

    /// The download as a stream: progress reports, partial images (with `progressiveLoad`), then
    /// `.finished`; failures end the stream with a ``WebImageError``. Ending the iteration early
    /// cancels this caller's interest.
    public func events(
        with url: URL?,
        options: ImageOptions = [],
        context: ImageContext? = nil
    )
        -> AsyncThrowingStream<ImageDownloadEvent, any Error>
    {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: ImageDownloadEvent.self)
        let token = download(
            with: url,
            options: options,
            context: context,
            progress: { received, expected, _ in continuation.yield(.progress(received: received, expected: expected))
            },
            completed: { image, data, error, finished in
                if !finished {
                    if let image { continuation.yield(.partial(image)) }
                    return
                }
                if let error {
                    continuation.finish(throwing: error)
                } else {
                    continuation.yield(.finished(ImageDownloadResult(image: image, data: data ?? Data())))
                    continuation.finish()
                }
            }
        )
        continuation.onTermination = { [weak self] termination in
            if case .cancelled = termination, let token { self?.cancel(token) }
        }
        return stream
    }

    // MARK: Queue

    /// Starts waiting operations while slots are free: priority first, then FIFO or LIFO.
    private func startWaiting() {
        while let entry = nextToStart() {
            let hooks = hooks.withLock { $0 }
            let environment = ImageDownloadEnvironment(
                session: session(for: entry.operation.options),
                configuration: configuration,
                headers: hooks.headers,
                requestModifier: hooks.requestModifier,
                responseModifier: hooks.responseModifier,
                decryptor: hooks.decryptor,
                publish: { [weak self] event in self?.publish(event) },
                resumableData: resumableData
            )
            entry.operation.start(in: environment) { [weak self] in self?.operationFinished(entry) }
        }
    }

    /// The shared session, or for `allowInvalidSSLCertificates` one that skips chain validation
    /// (keeping the session's pins).
    private func session(for options: ImageOptions) -> HTTPSession {
        guard options.contains(.allowInvalidSSLCertificates) else { return session }
        return permissiveSession.withLock { permissive in
            if let permissive { return permissive }
            var configuration = session.configuration
            // Chain validation is relaxed; pins, when the session has them, still hold.
            configuration.securityPolicy.allowInvalidCertificates = true
            let made = HTTPSession(configuration: configuration)
            permissive = made
            return made
        }
    }

    private func nextToStart() -> Entry? {
        state.withLock { state in
            guard !state.suspended, state.running < max(1, configuration.maxConcurrentDownloads) else { return nil }
            state.waiting.removeAll { $0.operation.isFinished }
            guard !state.waiting.isEmpty else { return nil }
            let lifo = configuration.executionOrder == .lifo
            let best = state.waiting.indices.max { a, b in
                let (pa, pb) = (state.waiting[a].priority, state.waiting[b].priority)
                if pa != pb { return pa < pb }
                let (sa, sb) = (state.waiting[a].sequence, state.waiting[b].sequence)
                return lifo ? sa < sb : sa > sb
            }!
            state.running += 1
            return state.waiting.remove(at: best)
        }
    }

    private func operationFinished(_ entry: Entry) {
        state.withLock { state in
            state.running -= 1
            if state.operations[entry.key] === entry { state.operations[entry.key] = nil }
        }
        startWaiting()
    }

    /// An operation in the downloader's books: its coalescing key and arrival order.
    final class Entry: Sendable {
        let key: ImageDownloadKey
        let sequence: UInt64
        let operation: any DownloadOperationProtocol

        init(key: ImageDownloadKey, sequence: UInt64, operation: any DownloadOperationProtocol) {
            self.key = key
            self.sequence = sequence
            self.operation = operation
        }

        /// The operation's priority: the highest its waiting callers ask for.
        var priority: ImagePriority { operation.priority }
    }

}

/// One step of ``ImageDownloader/events(with:options:context:)-(URL?,_,_)``.
public enum ImageDownloadEvent: Sendable {
    /// Bytes received so far and expected (0 when unknown).
    case progress(received: Int64, expected: Int64)
    /// A preview decoded from the data so far.
    case partial(DecodedImage)
    /// The final result; the stream ends after it.
    case finished(ImageDownloadResult)
}

/// What a finished download delivers.
public struct ImageDownloadResult: Sendable {
    /// The decoded image (`nil` with `avoidDecodeImage` or when decoding is off).
    public var image: DecodedImage?
    /// The downloaded bytes.
    public var data: Data
}
