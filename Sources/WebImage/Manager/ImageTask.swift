import Foundation
@_spi(WebImageInternals) import WebImageCoders

/// One image load you can watch, reprioritise and cancel (Nuke's `ImageTask`): made by
/// `ImageManager.imageTask(with:)`, which starts it at once.
///
/// ```swift
/// let task = ImageManager.shared.imageTask(with: ImageRequest(url: url))
/// task.priority = .high
/// for await progress in task.progress { print(progress.fraction ?? 0) }
/// let image = try await task.image
/// ```
///
/// The outcome is kept: ``response`` and ``image`` return it however late they are awaited.
/// ``events``, ``progress`` and ``previews`` deliver what happens from the moment they are
/// read, then end with the outcome; each read is a new sequence (any number of readers).
///
/// **Cancellation.** ``cancel()`` ends the load for this task (the download stops when no other
/// caller wants it); awaiting ``response`` or ``image``, or reading ``events``, from a Swift task
/// that is cancelled cancels the load too. Its failures are ``WebImageError``s, typed.
///
/// Thread-safe; events are delivered on the thread that produced them.
public final class ImageTask: Sendable, Hashable {
    /// Bytes received so far and the total when the server said it.
    public struct Progress: Sendable, Hashable {
        /// Bytes received.
        public var completed: Int64
        /// The expected total, `nil` when unknown.
        public var total: Int64?

        /// Received over total, `nil` when the total is unknown.
        public var fraction: Double? {
            guard let total, total > 0 else { return nil }
            return min(1, Double(completed) / Double(total))
        }

        /// `completed` of `total` bytes.
        public init(completed: Int64, total: Int64?) {
            self.completed = completed
            self.total = total
        }
    }

    /// One step of a load, in ``events``.
    public enum Event: Sendable {
        /// Bytes received.
        case progress(Progress)
        /// A progressive preview (``ImageOptions/progressiveLoad``).
        case preview(DecodedImage)
        /// The first bytes of a download told the image's format, size and frame count, before
        /// the body ended (GIF and animated WebP: the frames seen so far).
        case info(ImageHeader)
        /// The cached image, delivered before the server is asked (``ImageRequest/CachePolicy/revalidate``).
        case cached(ImageLoadResult)
        /// The final result; the sequence ends after it.
        case finished(ImageLoadResult)
    }

    /// Where the task is.
    public enum State: Sendable, Hashable {
        case running, completed, failed, cancelled
    }

    /// What was asked for.
    public let request: ImageRequest

    struct Store {
        var operation: ImageLoadOperation?
        var priority: ImagePriority
        var progress = Progress(completed: 0, total: nil)
        var outcome: Result<ImageLoadResult, WebImageError>?
        var cancelled = false
        var listeners: [UInt64: @Sendable (Delivery) -> Void] = [:]
        var nextListener: UInt64 = 0
    }

    /// What listeners get: a step, or the end.
    enum Delivery: Sendable {
        case event(Event)
        case end(Result<ImageLoadResult, WebImageError>)
    }

    let store: Protected<Store>

    init(request: ImageRequest) {
        self.request = request
        store = Protected(Store(priority: request.priority))
    }

    /// Where this task's download waits in the queue; changing it while the download waits for
    /// a slot moves it (a load shared with other callers runs at the highest priority asked).
    public var priority: ImagePriority {
        get { store.withLock { $0.priority } }
        set {
            let operation = store.withLock { store -> ImageLoadOperation? in
                store.priority = newValue
                return store.operation
            }
            operation?.priority = newValue
        }
    }

    /// Where the task is now.
    public var state: State {
        store.withLock { store in
            switch store.outcome {
            case nil: store.cancelled ? .cancelled : .running
            case .success: .completed
            case .failure(let error): error.code == .cancelled ? .cancelled : .failed
            }
        }
    }

    /// The bytes received so far.
    public var currentProgress: Progress { store.withLock { $0.progress } }

    /// Ends this task's interest in the load: the outcome becomes ``WebImageError/Code/cancelled``
    /// unless it had already arrived.
    public func cancel() {
        let operation = store.withLock { store -> ImageLoadOperation? in
            guard store.outcome == nil, !store.cancelled else { return nil }
            store.cancelled = true
            return store.operation
        }
        operation?.cancel()
    }

    /// The result: the image, its data when known, and where it came from.
    /// - Throws: ``WebImageError`` (``WebImageError/Code/cancelled`` when cancelled).
    public var response: ImageLoadResult {
        get async throws(WebImageError) { try await outcome().get() }
    }

    /// The image (``WebImageError/Code/badImageData`` when the request asked not to decode).
    public var image: DecodedImage {
        get async throws(WebImageError) {
            let result = try await response
            guard let image = result.image else {
                throw WebImageError(.badImageData, url: result.url, message: "\(result.url): loaded without decoding")
            }
            return image
        }
    }

    /// Waits for the outcome; the Swift task's cancellation cancels the load.
    private func outcome() async -> Result<ImageLoadResult, WebImageError> {
        if let outcome = store.withLock({ $0.outcome }) { return outcome }
        return await withTaskCancellationHandler {
            await withHandOffContinuation { continuation in
                // `.end` comes exactly once (at once when the outcome is already known).
                listen { delivery in
                    if case .end(let outcome) = delivery { continuation.resume(returning: outcome) }
                }
            }
        } onCancel: {
            cancel()
        }
    }

    /// Adds a listener; it gets `.end` at once when the outcome is already known (and is not
    /// kept). Returns its id, to stop listening.
    @discardableResult
    func listen(_ listener: @escaping @Sendable (Delivery) -> Void) -> UInt64? {
        let (id, known) = store.withLock { store -> (UInt64?, Result<ImageLoadResult, WebImageError>?) in
            if let outcome = store.outcome { return (nil, outcome) }
            store.nextListener += 1
            store.listeners[store.nextListener] = listener
            return (store.nextListener, nil)
        }
        if let known { listener(.end(known)) }
        return id
    }

    /// Records the manager's operation behind this task (not once the outcome is known).
    func attach(_ operation: ImageLoadOperation) {
        store.withLock { store in
            if store.outcome == nil { store.operation = operation }
        }
    }

    /// Removes a listener.
    func stopListening(_ id: UInt64?) {
        guard let id else { return }
        _ = store.withLock { $0.listeners.removeValue(forKey: id) }
    }

    /// Takes one event of the manager's pipeline.
    func receive(_ event: ImageManager.Event) {
        let delivery: Delivery
        let listeners = store.withLock { store -> [@Sendable (Delivery) -> Void] in
            if case .progress(let received, let expected, _) = event {
                store.progress = Progress(completed: received, total: expected > 0 ? expected : nil)
            }
            return Array(store.listeners.values)
        }
        switch event {
        case .progress(let received, let expected, _):
            delivery = .event(.progress(Progress(completed: received, total: expected > 0 ? expected : nil)))
        case .partial(let image, _):
            delivery = .event(.preview(image))
        case .info(let header, _):
            delivery = .event(.info(header))
        case .image(let result, final: false):
            delivery = .event(.cached(result))
        case .image(let result, final: true), .notModified(let result):
            return finish(.success(result))
        case .refreshFailed(let cached, _):
            // A revalidation that failed still has the cached image to give.
            return finish(.success(cached))
        case .failure(let error, _):
            return finish(.failure(error))
        }
        for listener in listeners { listener(delivery) }
    }

    private func finish(_ outcome: Result<ImageLoadResult, WebImageError>) {
        let listeners = store.withLock { store -> [@Sendable (Delivery) -> Void] in
            guard store.outcome == nil else { return [] }
            store.outcome = outcome
            store.operation = nil
            defer { store.listeners.removeAll() }
            return Array(store.listeners.values)
        }
        for listener in listeners { listener(.end(outcome)) }
    }

    public static func == (lhs: ImageTask, rhs: ImageTask) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
