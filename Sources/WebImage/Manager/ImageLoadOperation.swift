import Foundation
import Synchronization
import WebImageCoders

/// One ``ImageManager`` load (SDWebImageCombinedOperation): its cache query and its download
/// interest. `cancel()` stops both; the caller's completion then gets `cancelled` once.
public final class ImageLoadOperation: Sendable, Hashable {
    private struct State {
        var cacheOperation: (any ImageCacheOperation)?
        var loaderToken: (any ImageLoadingToken)?
        var cancelled = false
        var finished = false
    }

    private let state = Protected(State())
    /// The URL being loaded (`nil` for a missing URL).
    public let url: URL?
    private let onCancel: @Sendable () -> Void

    /// Load operations alive in the process: a leak check for tests and soak runs.
    package static let liveCount = Atomic<Int>(0)

    deinit { Self.liveCount.subtract(1, ordering: .relaxed) }

    init(url: URL?, onCancel: @escaping @Sendable () -> Void) {
        Self.liveCount.add(1, ordering: .relaxed)
        self.url = url
        self.onCancel = onCancel
    }

    /// Stops the cache query and this caller's download interest (the network load stops when no
    /// other caller wants it). The completion gets `cancelled`, unless it already finished.
    public func cancel() {
        let (cache, token, first) = state.withLock {
            state -> ((any ImageCacheOperation)?, (any ImageLoadingToken)?, Bool) in
            guard !state.cancelled, !state.finished else { return (nil, nil, false) }
            state.cancelled = true
            return (state.cacheOperation, state.loaderToken, true)
        }
        guard first else { return }
        cache?.cancel()
        token?.cancel()
        onCancel()
    }

    /// Whether `cancel()` was called.
    public var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// Whether the final completion has run (or cancellation was delivered).
    public var isFinished: Bool { state.withLock { $0.finished } }

    /// Records the running cache query, cancelling it at once when the load already was.
    func attach(cacheOperation: (any ImageCacheOperation)?) {
        let cancelled = state.withLock { state in
            state.cacheOperation = cacheOperation
            return state.cancelled
        }
        if cancelled { cacheOperation?.cancel() }
    }

    /// Records the loader interest, cancelling it at once when the load already was.
    func attach(loaderToken: (any ImageLoadingToken)?) {
        let cancelled = state.withLock { state in
            state.loaderToken = loaderToken
            return state.cancelled
        }
        if cancelled { loaderToken?.cancel() }
    }

    /// Claims the right to deliver the final completion: `true` exactly once.
    func claimFinish() -> Bool {
        state.withLock { state in
            guard !state.finished else { return false }
            state.finished = true
            state.cacheOperation = nil
            state.loaderToken = nil
            return true
        }
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
}

/// One step of ``ImageManager/images(with:options:context:)``.
public enum ImageLoadEvent: Sendable {
    /// Bytes received and expected (0 when unknown).
    case progress(received: Int64, expected: Int64)
    /// A progressive preview.
    case partial(DecodedImage)
    /// A finished image. With `refreshCached` the cached image comes first and a changed image
    /// may follow.
    case image(ImageLoadResult)
}
