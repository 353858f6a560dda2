import Foundation
import Synchronization
@_spi(WebImageInternals) import WebImageCoders

/// One caller's ``ImageManager`` load (SDWebImageCombinedOperation): its subscription to the
/// load task that serves it. `cancel()` ends this caller's interest, and the task's work when no
/// other caller wants it; the completion then gets `cancelled` once.
public final class ImageLoadOperation: Sendable, Hashable {
    private struct State {
        var task: ResultLoad?
        var subscription: UInt64 = 0
        var priority: ImagePriority
        var cancelled = false
        var finished = false
    }

    private let state: Protected<State>
    /// The URL being loaded (`nil` for a missing URL).
    public let url: URL?
    private let callbackQueue: DispatchQueue?
    private let sink: @Sendable (ImageManager.Event) -> Void
    private let onFinish: @Sendable (ImageLoadOperation) -> Void

    /// Load operations alive in the process: a leak check for tests and soak runs.
    package static let liveCount = Atomic<Int>(0)

    deinit { Self.liveCount.subtract(1, ordering: .relaxed) }

    /// An operation delivering to `sink` (on `callbackQueue` when set); `onFinish` runs once,
    /// before the final event goes out.
    init(
        url: URL?,
        priority: ImagePriority = .normal,
        callbackQueue: DispatchQueue?,
        sink: @escaping @Sendable (ImageManager.Event) -> Void,
        onFinish: @escaping @Sendable (ImageLoadOperation) -> Void
    ) {
        Self.liveCount.add(1, ordering: .relaxed)
        state = Protected(State(priority: priority))
        self.url = url
        self.callbackQueue = callbackQueue
        self.sink = sink
        self.onFinish = onFinish
    }

    /// Stops this caller's interest (the load's work stops when no other caller wants it). The
    /// completion gets `cancelled`, unless it already finished.
    public func cancel() {
        let (task, subscription, first) = state.withLock { state -> (ResultLoad?, UInt64, Bool) in
            guard !state.cancelled, !state.finished else { return (nil, 0, false) }
            state.cancelled = true
            return (state.task, state.subscription, true)
        }
        guard first else { return }
        task?.unsubscribe(subscription)
        deliver(.failure(.cancelled(url), url))
    }

    /// Where this caller's load waits in the loader's queue. Setting it while the download waits
    /// for a slot moves it (a shared load runs at the highest priority of its callers); a
    /// running or finished load is not affected.
    public var priority: ImagePriority {
        get { state.withLock { $0.priority } }
        set {
            let (task, subscription) = state.withLock { state -> (ResultLoad?, UInt64) in
                state.priority = newValue
                return (state.task, state.subscription)
            }
            task?.setPriority(newValue, subscription: subscription)
        }
    }

    /// Whether `cancel()` was called.
    public var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// Whether the final completion has run (or cancellation was delivered).
    public var isFinished: Bool { state.withLock { $0.finished } }

    /// Records the task this operation subscribed to; `false` when it was cancelled meanwhile
    /// (the caller then unsubscribes it).
    func attach(to task: ResultLoad, subscription: UInt64) -> Bool {
        state.withLock { state in
            guard !state.cancelled else { return false }
            state.task = task
            state.subscription = subscription
            return true
        }
    }

    /// Passes `event` to the caller: the final one exactly once, nothing after it.
    func deliver(_ event: ImageManager.Event) {
        let passes = state.withLock { state -> Bool in
            guard !state.finished else { return false }
            if event.isFinal {
                state.finished = true
                state.task = nil
            }
            return true
        }
        guard passes else { return }
        if event.isFinal { onFinish(self) }
        if let callbackQueue { callbackQueue.async { [sink] in sink(event) } } else { sink(event) }
    }

    public static func == (lhs: ImageLoadOperation, rhs: ImageLoadOperation) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

/// What an image load delivers.
public struct ImageLoadResult: Sendable {
    /// The image (`nil` with `avoidDecodeImage`).
    public var image: DecodedImage?
    /// The image's bytes, when known (downloads, disk hits, `queryMemoryData`).
    public var data: Data?
    /// Where it came from: `.memory`, `.disk`, or `.none` for the network.
    public var cacheType: ImageCacheType
    /// The URL asked for.
    public var url: URL
    /// What is known of the bytes: their content type, validators (`ETag`, `Last-Modified`) and
    /// caching headers, as the loader answered or the disk entry keeps them; `nil` for a memory
    /// hit.
    public var metadata: DiskCacheMetadata? = nil
}

/// One step of ``ImageManager/images(with:options:context:)-(URL?,_,_)``.
public enum ImageLoadEvent: Sendable {
    /// Bytes received and expected (0 when unknown).
    case progress(received: Int64, expected: Int64)
    /// A progressive preview.
    case partial(DecodedImage)
    /// The first bytes of a download told the image's format, size and frame count.
    case info(ImageHeader)
    /// A finished image. With `refreshCached` the cached image comes first and a changed image
    /// may follow.
    case image(ImageLoadResult)
}
