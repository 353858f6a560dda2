import Foundation
import Synchronization
@_spi(WebImageInternals) import WebImageCoders

/// One request in flight (NSURLSessionTask's role): a unique identifier, a state, progress,
/// cancel and suspend/resume, and its events as an `AsyncSequence`.
///
/// Tasks start suspended; ``resume()`` starts them (the session's convenience methods do it for
/// you). `suspend()` on a running task stops reading the body, so the server is held back by TCP
/// flow control until `resume()`. Thread-safe.
public final class HTTPSessionTask: Sendable, Identifiable, CustomStringConvertible {
    /// The task's state as the seeds name them.
    public enum State: Sendable, Hashable {
        case suspended, running, canceling, completed
    }

    private struct Storage {
        var machine = HTTPSessionTaskStateMachine()
        var work: Task<Void, Never>?
        var currentRequest: HTTPSession.Request
        var response: HTTPSession.Response?
        var error: HTTPSessionError?
        var bytesReceived: Int64 = 0
        var bytesExpectedToReceive: Int64?
        var bytesSent: Int64 = 0
        var bytesExpectedToSend: Int64?
        var eventContinuations: [AsyncStream<HTTPTaskEvent>.Continuation] = []
        /// The runner, parked while the task is suspended; released by resume() or cancel().
        var pausedRunner: HandOffContinuation<Void, Never>?
        /// Made on first use, so tasks nobody watches pay nothing for Foundation's Progress.
        var downloadProgress: Progress?
        var uploadProgress: Progress?
        var taskDescription: String?
        var priority = HTTPSessionTask.defaultPriority
        /// When the task was started, among all tasks of the process (0 before it starts).
        var startOrder: UInt64 = 0
        /// The session's read timeout stopped the work (see ``stopWorkForReadTimeout()``).
        var readTimedOut = false
        /// The read timeout's watch of the exchange in progress: a resume starts its idle time
        /// again.
        var readWatch: ReadTimeoutWatchdog.Watch?
    }

    private static let nextIdentifier = Atomic<Int>(1)
    private static let nextStartOrder = Atomic<UInt64>(1)

    /// Unique within the process.
    public let taskIdentifier: Int
    public var id: Int { taskIdentifier }
    /// The request as created.
    public let originalRequest: HTTPSession.Request
    /// Download progress: `totalUnitCount` is `Content-Length` (-1 when unknown). Made on first
    /// access and kept up to date from then on.
    public var progress: Progress {
        storage.withLock { storage in
            if let progress = storage.downloadProgress { return progress }
            let progress = Progress(totalUnitCount: storage.bytesExpectedToReceive ?? -1)
            progress.completedUnitCount = storage.bytesReceived
            storage.downloadProgress = progress
            return progress
        }
    }

    /// Upload progress: `totalUnitCount` is the body length. Made on first access.
    public var uploadProgress: Progress {
        storage.withLock { storage in
            if let progress = storage.uploadProgress { return progress }
            let progress = Progress(totalUnitCount: storage.bytesExpectedToSend ?? -1)
            progress.completedUnitCount = storage.bytesSent
            storage.uploadProgress = progress
            return progress
        }
    }

    /// Weak so a forgotten task does not keep its session alive.
    private weak let weakSession: HTTPSession?
    private let storage: Protected<Storage>
    private let runner: @Sendable (HTTPSessionTask) async -> Void
    /// The session's ``HTTPSession/Configuration/postsTaskNotifications``.
    private let postsNotifications: Bool
    private let onFinish: @Sendable (HTTPSessionTask, HTTPSessionError?) -> Void

    init(
        request: HTTPSession.Request,
        session: HTTPSession,
        runner: @escaping @Sendable (HTTPSessionTask) async -> Void,
        onFinish: @escaping @Sendable (HTTPSessionTask, HTTPSessionError?) -> Void
    ) {
        Self.liveCount.add(1, ordering: .relaxed)
        taskIdentifier = Self.nextIdentifier.wrappingAdd(1, ordering: .relaxed).oldValue
        originalRequest = request
        weakSession = session
        storage = Protected(Storage(currentRequest: request, taskDescription: session.configuration.taskDescription))
        postsNotifications = session.configuration.postsTaskNotifications
        self.runner = runner
        self.onFinish = onFinish
    }

    deinit { Self.liveCount.subtract(1, ordering: .relaxed) }

    /// Tasks alive in the process: a leak check for tests and soak runs.
    package static let liveCount = Atomic<Int>(0)

    /// The session that made the task (`nil` once it is gone).
    public var session: HTTPSession? { weakSession }

    public var state: State {
        storage.withLock {
            switch $0.machine.state {
            case .initialized: .suspended
            case .running(paused: true): .suspended
            case .running(paused: false): .running
            case .canceling: .canceling
            case .completed: .completed
            }
        }
    }

    /// The request being sent now (it changes when a redirect is followed).
    public var currentRequest: HTTPSession.Request { storage.withLock { $0.currentRequest } }
    /// The last response head received.
    public var response: HTTPSession.Response? { storage.withLock { $0.response } }
    /// The error the task completed with, if any.
    public var error: HTTPSessionError? { storage.withLock { $0.error } }
    public var countOfBytesReceived: Int64 { storage.withLock { $0.bytesReceived } }
    /// `Content-Length` of the response, when known.
    public var countOfBytesExpectedToReceive: Int64? { storage.withLock { $0.bytesExpectedToReceive } }
    public var countOfBytesSent: Int64 { storage.withLock { $0.bytesSent } }
    public var countOfBytesExpectedToSend: Int64? { storage.withLock { $0.bytesExpectedToSend } }

    /// The task's events from now on, ending after `.completed`. Subscribe before `resume()` to
    /// see them all.
    public var events: AsyncStream<HTTPTaskEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: HTTPTaskEvent.self)
        let finished = storage.withLock { storage -> Bool in
            if storage.machine.state == .completed { return true }
            storage.eventContinuations.append(continuation)
            return false
        }
        if finished { continuation.finish() }
        return stream
    }

    /// Starts the task, or continues a suspended one.
    public func resume() {
        let (action, parked, readWatch) = storage.withLock { storage in
            let action = storage.machine.resume()
            if action == .start { storage.startOrder = Self.takeStartOrder() }
            defer { if action == .unpause { storage.pausedRunner = nil } }
            return action == .unpause ? (action, storage.pausedRunner, storage.readWatch) : (action, nil, nil)
        }
        readWatch?.touch()
        parked?.resume()
        if action != .none { post(Self.didResumeNotification) }
        guard action == .start else { return }
        startWork()
    }

    /// Runs the runner in a Swift task of its own, kept so `cancel()` can stop it: a cancel
    /// that came between the start and the task's being kept stops it at once.
    @discardableResult
    private func startWork() -> Task<Void, Never> {
        let work = Task { await runner(self) }
        let cancelled = storage.withLock { storage in
            storage.work = work
            return storage.machine.isCanceling
        }
        if cancelled { work.cancel() }
        return work
    }

    /// When the task was started relative to the process's other tasks: tasks of equal priority
    /// waiting for a host go in this order, whatever order their Swift tasks first run in.
    var startOrder: UInt64 { storage.withLock { $0.startOrder } }

    private static func takeStartOrder() -> UInt64 {
        nextStartOrder.wrappingAdd(1, ordering: .relaxed).oldValue
    }

    /// Starts the task and waits for its end (the `async` APIs use this). Cancelling the calling
    /// task cancels it; `cancel()` works as for a resumed task. The runner has a Swift task of
    /// its own (not the caller's): `cancel()` must be able to stop an exchange that waits on the
    /// network, and cancelling the caller's task instead would leave the caller cancelled.
    func runToEnd() async {
        let action = storage.withLock { storage in
            let action = storage.machine.resume()
            if action == .start { storage.startOrder = Self.takeStartOrder() }
            return action
        }
        guard action == .start else { return }
        post(Self.didResumeNotification)
        let work = startWork()
        await withTaskCancellationHandler {
            await work.value
        } onCancel: {
            self.cancel()
        }
    }

    /// Pauses the task: nothing is started, and a running task stops reading its body.
    public func suspend() {
        let paused = storage.withLock { storage in
            storage.machine.state == .running(paused: false) && storage.machine.suspend()
        }
        if paused { post(Self.didSuspendNotification) }
    }

    /// Cancels the task; it completes with a `cancelled` error (once).
    public func cancel() {
        let (action, work, parked) = storage.withLock { storage in
            defer { storage.pausedRunner = nil }
            return (storage.machine.cancel(), storage.work, storage.pausedRunner)
        }
        parked?.resume()
        switch action {
        case .completeCancelled:
            finish(.cancelled(originalRequest.url), alreadyMarkedComplete: true)
        case .stopWork:
            work?.cancel()
        case .none:
            break
        }
    }

    /// Stops the running work because its request received nothing for the session's read
    /// timeout: the task then fails with `timedOut` (a `cancel()` that came first still wins).
    /// `false`, and nothing stopped, while the task is suspended.
    func stopWorkForReadTimeout() -> Bool {
        let work = storage.withLock { storage -> Task<Void, Never>? in
            guard !storage.machine.isPaused, let work = storage.work else { return nil }
            storage.readTimedOut = true
            return work
        }
        work?.cancel()
        return work != nil
    }

    /// Whether the session's read timeout stopped the work.
    var wasStoppedByReadTimeout: Bool { storage.withLock { $0.readTimedOut } }

    /// The read timeout's watch of the exchange in progress (`nil` once it ends): the idle time
    /// starts again when a suspended task resumes, however long it was suspended.
    func watchReads(_ watch: ReadTimeoutWatchdog.Watch?) { storage.withLock { $0.readWatch = watch } }

    /// A label for the task, free for the caller (URLSessionTask's `taskDescription`). Default:
    /// the session's ``HTTPSession/Configuration/taskDescription``.
    public var taskDescription: String? {
        get { storage.withLock { $0.taskDescription } }
        set { storage.withLock { $0.taskDescription = newValue } }
    }

    /// URLSessionTask's `defaultPriority` (0.5), `lowPriority` (0.25) and `highPriority` (0.75).
    public static let defaultPriority: Float = 0.5
    public static let lowPriority: Float = 0.25
    public static let highPriority: Float = 0.75

    /// How soon the task starts among the session's tasks waiting for the same host (see
    /// ``HTTPSession/Configuration/maximumConnectionsPerHost``), from 0 to 1 (clamped); higher
    /// first, equal ones in the order they were resumed. Changing it reorders a waiting task;
    /// a running one is not affected. Default ``defaultPriority``.
    public var priority: Float {
        get { storage.withLock { $0.priority } }
        set {
            let priority = newValue.isNaN ? Self.defaultPriority : min(max(newValue, 0), 1)
            storage.withLock { $0.priority = priority }
            session?.admission.reprioritize(
                HostAdmission.key(for: originalRequest.url),
                taskIdentifier: taskIdentifier,
                priority: priority
            )
        }
    }

    public var description: String {
        "HTTPSessionTask #\(taskIdentifier) \(originalRequest.method) \(originalRequest.url)"
    }

    // MARK: Internal, for the runner

    var isCanceling: Bool { storage.withLock { $0.machine.isCanceling } }

    /// Parks the runner while the task is suspended (no polling); returns on resume or cancel.
    /// A running task returns at once, without a continuation (every request asks).
    func waitWhilePaused() async {
        guard storage.withLock({ $0.machine.isPaused }) else { return }
        await withTaskCancellationHandler {
            await withHandOffContinuation { (continuation: HandOffContinuation<Void, Never>) in
                // Checked under the lock the cancel handler also takes: either the handler ran
                // first (and Task.isCancelled is already true here) or it will find this waiter.
                let park = storage.withLock { storage -> Bool in
                    guard storage.machine.isPaused, !Task.isCancelled else { return false }
                    storage.pausedRunner = continuation
                    return true
                }
                if !park { continuation.resume() }
            }
        } onCancel: {
            let parked = storage.withLock { storage in
                defer { storage.pausedRunner = nil }
                return storage.pausedRunner
            }
            parked?.resume()
        }
    }

    func emit(_ event: HTTPTaskEvent) {
        let continuations = storage.withLock { $0.eventContinuations }
        for continuation in continuations { continuation.yield(event) }
    }

    func update(request: HTTPSession.Request) { storage.withLock { $0.currentRequest = request } }

    /// A final response head; `resumedAt` bytes of the body are already on disk (a resumed
    /// download), and count as received.
    func update(response: HTTPSession.Response, resumedAt offset: Int64 = 0) {
        let expected = response.expectedContentLength.map { $0 + offset }
        let progress = storage.withLock {
            $0.response = response
            $0.bytesExpectedToReceive = expected
            $0.bytesReceived = offset
            return $0.downloadProgress
        }
        progress?.totalUnitCount = expected ?? -1
        progress?.completedUnitCount = offset
    }

    /// Counts a body chunk and publishes it to event subscribers, in one lock; tells the runner
    /// whether the task is now paused or being cancelled.
    /// `chunk` is made only when an event subscriber wants it.
    func didReceive(byteCount: Int, chunk: () -> Data) -> (isPaused: Bool, isCanceling: Bool) {
        let (total, progress, continuations, paused, canceling) = storage.withLock {
            $0.bytesReceived += Int64(byteCount)
            return (
                $0.bytesReceived, $0.downloadProgress, $0.eventContinuations, $0.machine.isPaused,
                $0.machine.isCanceling
            )
        }
        progress?.completedUnitCount = total
        if !continuations.isEmpty {
            let data = chunk()
            for continuation in continuations { continuation.yield(.data(data)) }
        }
        return (paused, canceling)
    }

    func didSend(total: Int64, expected: Int64?) {
        let progress = storage.withLock {
            $0.bytesSent = total
            $0.bytesExpectedToSend = expected
            return $0.uploadProgress
        }
        progress?.totalUnitCount = expected ?? -1
        progress?.completedUnitCount = total
        emit(.uploadProgress(sent: total, expected: expected))
    }

    /// Records the outcome and ends the event streams; returns `false` if already complete.
    @discardableResult
    func finish(_ error: HTTPSessionError?, alreadyMarkedComplete: Bool = false) -> Bool {
        let continuations: [AsyncStream<HTTPTaskEvent>.Continuation]? = storage.withLock { storage in
            guard alreadyMarkedComplete || storage.machine.complete() else { return nil }
            storage.error = error
            defer { storage.eventContinuations = [] }
            return storage.eventContinuations
        }
        guard let continuations else { return false }
        onFinish(self, error)
        for continuation in continuations {
            continuation.yield(.completed(error))
            continuation.finish()
        }
        return true
    }
}

// MARK: Notifications

extension HTTPSessionTask {
    /// Posted on `NotificationCenter.default` when a task starts or continues after
    /// ``suspend()`` (AFNetworking's `AFNetworkingTaskDidResumeNotification`); the object is the
    /// task. Posted on the thread that resumed it. The task notifications are posted unless the
    /// session's ``HTTPSession/Configuration/postsTaskNotifications`` is off.
    public static let didResumeNotification = Notification.Name("swift-web-image.HTTPSessionTask.didResume")
    /// Posted when a running task is suspended (`AFNetworkingTaskDidSuspendNotification`); the
    /// object is the task.
    public static let didSuspendNotification = Notification.Name("swift-web-image.HTTPSessionTask.didSuspend")
    /// Posted once when a data, upload or download task completes, before its completion handler
    /// (`AFNetworkingTaskDidCompleteNotification`); the object is the task and `userInfo` holds
    /// the ``NotificationKey`` values that apply. Posted on the thread that finished the task.
    public static let didCompleteNotification = Notification.Name("swift-web-image.HTTPSessionTask.didComplete")

    /// The `userInfo` keys of ``didCompleteNotification``.
    public enum NotificationKey {
        /// The body a data or upload task received (`Data`; AF's `…ResponseDataKey`).
        public static let responseData = "responseData"
        /// Where a download task's file is (`URL`, on success; AF's `…AssetPathKey`).
        public static let downloadedFile = "downloadedFile"
        /// The last response head (`HTTPSession.Response`), when one arrived.
        public static let response = "response"
        /// The failure (`HTTPSessionError`), when the task failed (AF's `…ErrorKey`).
        public static let error = "error"
        /// The task's ``HTTPTaskMetrics`` (AF's `…SessionTaskMetrics`).
        public static let metrics = "metrics"
    }

    func post(_ name: Notification.Name, userInfo: [AnyHashable: Any]? = nil) {
        guard postsNotifications else { return }
        NotificationCenter.default.post(name: name, object: self, userInfo: userInfo)
    }

    /// Posts ``didCompleteNotification`` with the values there are.
    func postCompletion(error: HTTPSessionError?, metrics: HTTPTaskMetrics, body: Data? = nil, file: URL? = nil) {
        guard postsNotifications else { return }
        // Built as NotificationCenter takes it: a [String: Any] would be converted entry by entry.
        var userInfo: [AnyHashable: Any] = [NotificationKey.metrics: metrics]
        if let body { userInfo[NotificationKey.responseData] = body }
        if let file { userInfo[NotificationKey.downloadedFile] = file }
        if let response { userInfo[NotificationKey.response] = response }
        if let error { userInfo[NotificationKey.error] = error }
        post(Self.didCompleteNotification, userInfo: userInfo)
    }
}
