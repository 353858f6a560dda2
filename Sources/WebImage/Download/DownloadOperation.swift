import Foundation
import Logging
import Synchronization
@_spi(WebImageInternals) import WebImageCoders
import WebImageHTTP

/// The default ``DownloadOperationProtocol`` (SDWebImageDownloaderOperation): one HTTP load, its
/// callers' progress and partial images, then decoding.
///
/// Callers attach handlers; every handler gets progress and exactly one completion. Decoding
/// runs in the operation's own task, never on an event loop.
public final class DownloadOperation: DownloadOperationProtocol {
    /// A caller's progress handler.
    public typealias Progress = ImageDownloader.ProgressHandler
    /// A caller's completion handler.
    public typealias Completed = ImageDownloader.CompletedHandler

    struct Handler: Sendable {
        var progress: Progress?
        var completed: Completed?
        /// What this caller wants the bytes decoded into.
        var decoding: ImageDecodeRequest
    }

    /// The HTTP task and, with `progressiveLoad`, the preview decoder.
    struct Work: DownloadWork, Sendable {
        var task: HTTPSessionTask?
        var previews: ProgressiveDecodingLoop?
        /// The wait before a retry.
        var retryWait: Task<Void, Never>?

        func stop() {
            previews?.stop()
            task?.cancel()
            retryWait?.cancel()
        }
    }

    struct State {
        var machine: DownloadStateMachine<DownloadToken, Handler, Work>
        var lastProgress: ContinuousClock.Instant?
        var response: HTTPSession.Response?
        /// What the first bytes said, once they said it.
        var imageInfo: ImageHeader?
        /// Callers' ``ImageContext/imageInfoHandler``s waiting for it.
        var infoHandlers: [DownloadToken: @Sendable (ImageHeader, URL) -> Void] = [:]
        /// The bytes decoded once per distinct setting the callers asked for.
        var decoded: [ImageDecodeRequest.Key: Result<DecodedImage, WebImageError>] = [:]
        /// Set once every waiting caller's setting is decoded: a caller joining later that wants
        /// another one starts a load of its own instead.
        var decodingClosed = false

        /// Whether a caller wanting `decoding` can still be served by this load.
        func canServe(_ decoding: ImageDecodeRequest) -> Bool {
            !decodingClosed || decoding.key.undecoded || decoded[decoding.key] != nil
        }
    }

    /// The URL this operation loads.
    public let url: URL
    let context: ImageContext
    let state: Protected<State>

    /// Operations alive in the process: a leak check for tests and soak runs.
    package static let liveCount = Atomic<Int>(0)

    deinit { Self.liveCount.subtract(1, ordering: .relaxed) }

    /// An operation for `url`; `options` are the first caller's, `context` its settings.
    public init(url: URL, options: ImageOptions, context: ImageContext) {
        Self.liveCount.add(1, ordering: .relaxed)
        self.url = url
        self.context = context
        state = Protected(State(machine: DownloadStateMachine(options: options)))
    }

    /// Whether every caller has had its final completion.
    public var isFinished: Bool { state.withLock { $0.machine.phase == .finished } }

    /// The callers' combined options: high priority when any caller asked for it, low only when
    /// every caller did.
    public var options: ImageOptions { state.withLock { $0.machine.options } }

    /// Callers still waiting for their completion.
    var waitingCallerCount: Int { state.withLock { $0.machine.waitingHandlers.count } }

    /// The highest priority a waiting caller asks for.
    public var priority: ImagePriority { state.withLock { $0.machine.priority } }

    /// Changes one waiting caller's priority; a load not started yet moves in the queue.
    public func setPriority(_ priority: ImagePriority, for token: DownloadToken) {
        _ = state.withLock { $0.machine.setPriority(priority, for: token) }
    }

    /// Adds a caller; `false` once the operation has finished.
    public func addHandlers(
        for token: DownloadToken,
        options: ImageOptions,
        progress: Progress?,
        completed: @escaping Completed
    ) -> Bool {
        state.withLock { state in
            guard state.canServe(token.decoding) else { return false }
            let handler = Handler(progress: progress, completed: completed, decoding: token.decoding)
            return state.machine.join(token, options: options, handler: handler)
        }
    }

    /// Removes one caller (its completion gets `cancelled`); `true` when none is left.
    public func cancelHandlers(for token: DownloadToken) -> Bool {
        switch state.withLock({ $0.machine.leave(token) }) {
        case .none:
            // Its completion already went out (or is going out): nothing to cancel.
            return false
        case .cancelCaller(let handler):
            handler.completed?(nil, nil, .cancelled(url), true)
            return false
        case .cancelCallerAndStop(let handler, let work):
            handler.completed?(nil, nil, .cancelled(url), true)
            work?.stop()
            return true
        }
    }

    /// Cancels the load; every caller gets `cancelled`.
    public func cancel() {
        let (handlers, work) = state.withLock { $0.machine.cancelAll() }
        work?.stop()
        for handler in handlers { handler.completed?(nil, nil, .cancelled(url), true) }
    }

    /// Sends the request, reports progress and previews, then decodes and completes every caller.
    public func start(in environment: ImageDownloadEnvironment, onFinish: @escaping @Sendable () -> Void) {
        let (configuration, hooks) = (environment.configuration, environment)
        guard let options = state.withLock({ $0.machine.start() }) else { return onFinish() }
        // The download timeout is an idle timeout (the session's read timeout); the request's own
        // deadline is the optional overall one.
        var request = HTTPSession.Request(
            url: url,
            headers: hooks.headers,
            timeout: configuration.maximumDownloadDuration ?? .seconds(1_000_000_000)
        )
        request.handlesCookies = options.contains(.handleCookies)
        request.maximumBodySize = configuration.maximumDownloadSize
        // The session's response cache only with useURLCache (SDWebImage's UseNSURLCache): the
        // image caches are the caches of images.
        request.cachePolicy = options.contains(.useURLCache) ? .useProtocolCachePolicy : .reloadIgnoringLocalCacheData
        // refreshCached: revalidate what the caller has.
        if options.contains(.refreshCached), let cached = context.cachedResponse {
            if let etag = cached.etag { request.headers[.ifNoneMatch] = etag }
            if let lastModified = cached.lastModified { request.headers[.ifModifiedSince] = lastModified }
        }
        for modifier in [context.requestModifier, hooks.requestModifier].compactMap({ $0 }) {
            guard let modified = modifier(request) else {
                finish(image: nil, data: nil, error: .cancelled(url))
                return onFinish()
            }
            request = modified
        }
        if options.contains(.progressiveLoad), hooks.decryptor == nil, context.decryptor == nil,
            configuration.decodesImages,
            !options.contains(.avoidDecodeImage)
        {
            let loop = ProgressiveDecodingLoop(
                coders: context.coders ?? .shared,
                options: context.decodingOptions(for: options),
                queue: context.decodeQueue ?? .decoding,
                priority: ImageWorkQueue.Priority(options),
                budget: context.decodingMemoryBudget ?? .shared
            ) { [weak self] image in self?.deliverPartial(image) }
            if !state.withLock({ $0.machine.attach({ $0.previews = loop }, initial: Work()) }) { loop.stop() }
        }
        // Bytes an earlier download of this URL left continue, unless the request is conditional.
        let conditional = request.headers[.ifNoneMatch] != nil || request.headers[.ifModifiedSince] != nil
        let partial = conditional ? nil : environment.resumableData?.take(url)
        send(request, attempt: 1, partial: partial, options: options, in: environment, then: onFinish)
    }

    /// Bytes an attempt received before it was cut, and the validator (`If-Range`) that proves a
    /// continuation belongs to the same representation.
    struct PartialBody: Sendable {
        var data: Data
        var validator: String
    }

    /// Sends attempt `attempt` of `request`, continuing `partial` with `Range`/`If-Range` when
    /// given; a transient failure the retry strategy allows sends the next attempt after its wait.
    func send(
        _ request: HTTPSession.Request,
        attempt: Int,
        partial: PartialBody?,
        options: ImageOptions,
        in environment: ImageDownloadEnvironment,
        then onFinish: @escaping @Sendable () -> Void
    ) {
        let (session, configuration, events) = (environment.session, environment.configuration, environment.publish)
        var sent = request
        if let partial {
            sent.headers[.range] = "bytes=\(partial.data.count)-"
            sent.headers[.ifRange] = partial.validator
            sent.maximumBodySize = request.maximumBodySize.map { $0 - Int64(partial.data.count) }
        }
        // An unacceptable status ends the transfer at the head (as SDWebImage cancels the task
        // there): nobody reads a 128 MiB error page. A response modifier may still change the
        // status, so with one the body is read as usual.
        let acceptable = configuration.acceptableStatusCodes
        let hasResponseModifier = environment.responseModifier != nil || context.responseModifier != nil
        let skipsBody: @Sendable (HTTPSession.Response) -> Bool = { response in
            !hasResponseModifier && !acceptable.contains(response.statusCode)
        }
        let delegate = ProgressReporter(
            operation: self,
            interval: configuration.minimumProgressInterval,
            skipsBody: skipsBody,
            events: events,
            offset: Int64(partial?.data.count ?? 0),
            storesInURLCache: options.contains(.useURLCache)
        )
        // The completion runs in the HTTP task's own Swift task (never an event loop), so decoding
        // there is off the loops and serial for this operation.
        let task = session.dataTask(with: sent, delegate: delegate, delivery: .finishingThread) {
            [self, url] data, response, error in
            events(.stopped(url))
            let (data, response, resumed) = Self.joining(partial, data: data, response: response, error: error)
            if resumed == false {
                // The server sent a range we did not ask for: start over once, without `Range`.
                return send(request, attempt: attempt, partial: nil, options: options, in: environment, then: onFinish)
            }
            if let retry = retryPlan(attempt: attempt, data: data, response: response, error: error, configuration) {
                return scheduleRetry(retry, of: request, options: options, in: environment, then: onFinish)
            }
            if error != nil, let resumable = Self.resumable(data, response: response) {
                environment.resumableData?.store(resumable, for: url)
            }
            if error == nil { events(.finished(url)) }
            complete(
                Transfer(data: data, response: response, error: error),
                options: options,
                in: environment,
                then: onFinish
            )
        }
        // Every caller may have left while the request was built: then nothing is sent.
        guard state.withLock({ $0.machine.attach({ $0.task = task }, initial: Work()) }) else { return onFinish() }
        if attempt == 1 { report(received: 0, expected: 0, final: false) }
        configuration.logger.debug("download started", metadata: ["url": "\(url)", "attempt": "\(attempt)"])
        events(.started(url))
        task.resume()
    }

    /// Gives a caller the image's early facts: at once (off this stack) when they are known,
    /// else when the first bytes tell them.
    func addInfoHandler(for token: DownloadToken, _ handler: @escaping @Sendable (ImageHeader, URL) -> Void) {
        let known = state.withLock { state -> ImageHeader? in
            if state.imageInfo == nil, state.machine.isWanted { state.infoHandlers[token] = handler }
            return state.imageInfo
        }
        if let known { DispatchQueue.global().async { [url] in handler(known, url) } }
    }

    /// The first bytes told the image's facts: every waiting caller gets them, once.
    func deliverInfo(_ header: ImageHeader) {
        let handlers = state.withLock { state -> [@Sendable (ImageHeader, URL) -> Void] in
            guard state.imageInfo == nil else { return [] }
            state.imageInfo = header
            defer { state.infoHandlers.removeAll() }
            return state.machine.isWanted ? Array(state.infoHandlers.values) : []
        }
        for handler in handlers { handler(header, url) }
    }

    /// Feeds a chunk to the preview decoder (a copy, when progressive).
    func didReceive(_ chunk: UnsafeRawBufferPointer) {
        let loop = state.withLock { $0.machine.runningWork?.previews }
        loop?.offer(Data(chunk))
    }

    /// Delivers a preview to every caller, unless the final completion already went out.
    private func deliverPartial(_ image: DecodedImage) {
        let handlers = state.withLock { $0.machine.waitingHandlers.compactMap { $0.completed } }
        for handler in handlers { handler(image, nil, nil, false) }
    }

    /// Delivers the one completion to every caller that joined before the result was in; a
    /// caller arriving meanwhile starts a new load (SDWebImage's operations end the same way).
    func finish(image: DecodedImage?, data: Data?, error: WebImageError?) {
        deliver { _, _ in (image, data, error) }
    }

    /// ``finish(image:data:error:)`` of `data` with each caller's own decode of it
    /// (``State/decoded``); undecoded callers get the bytes alone.
    func finish(decodedFrom data: Data) {
        deliver { [url] handler, decoded in
            guard !handler.decoding.key.undecoded else { return (nil, data, nil) }
            switch decoded[handler.decoding.key] {
            case .success(let image): return (image, data, nil)
            case .failure(let error): return (nil, data, error)
            case nil: return (nil, nil, .cancelled(url))  // not reached: every setting was decoded
            }
        }
    }

    /// Gives every caller its completion, `outcome` saying what each gets (from the decodes
    /// kept for the load).
    private func deliver(
        _ outcome: (Handler, [ImageDecodeRequest.Key: Result<DecodedImage, WebImageError>]) -> (
            DecodedImage?, Data?, WebImageError?
        )
    ) {
        // The task's completion holds this operation: letting go of the work breaks the cycle.
        let work = state.withLock { $0.machine.beginDelivery() }
        work?.previews?.stop()
        while true {
            let (batch, response, decoded) = state.withLock { state in
                let batch = state.machine.takeFinalBatch()
                if batch == nil { state.decoded.removeAll() }  // the images are the callers' now
                return (batch, state.response, state.decoded)
            }
            guard let batch else { return }
            for (token, handler) in batch {
                if let response { token.recordResponse(response) }
                let (image, data, error) = outcome(handler, decoded)
                handler.completed?(image, data, error, true)
            }
        }
    }

    /// Reports progress to every caller: the first and final reports always, others at most
    /// every `interval`.
    func report(received: Int64, expected: Int64, final: Bool, interval: Duration = .zero) {
        let now = ContinuousClock.now
        let handlers = state.withLock { state -> [Progress] in
            if let last = state.lastProgress, !final, now - last < interval { return [] }
            state.lastProgress = now
            return state.machine.waitingHandlers.compactMap { $0.progress }
        }
        for handler in handlers { handler(received, expected, url) }
    }
}

/// Turns an HTTP task's chunks into throttled progress reports.
private final class ProgressReporter: HTTPSessionTaskByteDelegate {
    let operation: DownloadOperation
    let interval: Duration
    let skipsBody: @Sendable (HTTPSession.Response) -> Bool
    let events: @Sendable (ImageDownloaderEvent) -> Void
    /// Bytes an earlier attempt received, which this one continues.
    let offset: Int64
    /// Whether the session's response cache may keep the response (``ImageOptions/useURLCache``).
    let storesInURLCache: Bool

    func task(_ task: HTTPSessionTask, willCacheResponse proposed: HTTPCachedResponse) -> HTTPCachedResponse? {
        storesInURLCache ? proposed : nil
    }
    /// The body's first bytes until they tell the image's header; `nil` once they did, or
    /// after 256 KiB without one.
    private let probe = Protected<Data?>(Data())

    /// The header, the first time the bytes so far give one. The first chunk is read in place
    /// and kept (copied) only when it does not tell the header yet; later ones are appended to
    /// the kept bytes. Chunks come one at a time (the task's receive loop).
    private func probeHeader(_ chunk: UnsafeRawBufferPointer) -> ImageHeader? {
        guard !chunk.isEmpty, var bytes = probe.withLock({ $0 }) else { return nil }
        let header: ImageHeader?
        if bytes.isEmpty {
            header = chunk.baseAddress.flatMap { base in
                // No copy: the Data lives only for the parse (ImageHeader keeps no bytes).
                let mutable = UnsafeMutableRawPointer(mutating: base)
                return ImageHeader(Data(bytesNoCopy: mutable, count: chunk.count, deallocator: .none))
            }
            bytes = header == nil && chunk.count <= 256 << 10 ? Data(chunk) : Data()
        } else {
            bytes.append(contentsOf: chunk)
            header = ImageHeader(bytes)
        }
        // Done once a header is found, or after 256 KiB without one.
        let done = header != nil || bytes.isEmpty || bytes.count > 256 << 10
        probe.withLock { $0 = done ? nil : bytes }
        return header
    }

    init(
        operation: DownloadOperation,
        interval: Duration,
        skipsBody: @escaping @Sendable (HTTPSession.Response) -> Bool,
        events: @escaping @Sendable (ImageDownloaderEvent) -> Void,
        offset: Int64,
        storesInURLCache: Bool
    ) {
        self.storesInURLCache = storesInURLCache
        self.operation = operation
        self.interval = interval
        self.skipsBody = skipsBody
        self.events = events
        self.offset = offset
    }

    func task(_ task: HTTPSessionTask, didReceive response: HTTPSession.Response) async -> HTTPResponseDisposition {
        events(.receivedResponse(operation.url, response))
        return skipsBody(response) ? .finish : .allow
    }

    func task(_ task: HTTPSessionTask, didReceive data: Data) {
        data.withUnsafeBytes { self.task(task, didReceiveBytes: $0) }
    }

    func task(_ task: HTTPSessionTask, didReceiveBytes data: UnsafeRawBufferPointer) {
        operation.didReceive(data)
        if offset == 0, let header = probeHeader(data) {
            operation.deliverInfo(header)
            events(.receivedImageInfo(operation.url, header))
        }
        operation.report(
            received: offset + task.countOfBytesReceived,
            expected: task.countOfBytesExpectedToReceive.map { offset + $0 } ?? 0,
            final: false,
            interval: interval
        )
    }
}
