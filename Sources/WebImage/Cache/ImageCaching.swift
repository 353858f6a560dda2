import Foundation
import Synchronization
@_spi(WebImageInternals) import WebImageCoders

/// What a cache query found.
public struct ImageCacheQueryResult: Sendable {
    /// The image (`nil` on a miss, or for a disk hit with `avoidDecodeImage`).
    public var image: DecodedImage?
    /// The stored bytes: always for disk hits; for memory hits with `queryMemoryData`.
    public var data: Data?
    /// Where it was found; `.none` for a miss.
    public var cacheType: ImageCacheType
    /// The disk entry's metadata (validators for `refreshCached`), when the disk was read.
    public var metadata: DiskCacheMetadata?

    /// A result; the defaults describe a miss.
    public init(
        image: DecodedImage? = nil,
        data: Data? = nil,
        cacheType: ImageCacheType = .none,
        metadata: DiskCacheMetadata? = nil
    ) {
        self.image = image
        self.data = data
        self.cacheType = cacheType
        self.metadata = metadata
    }

    /// A miss.
    public static let miss = ImageCacheQueryResult()

    /// Whether anything was found.
    public var isHit: Bool { cacheType != .none && (image != nil || data != nil) }
}

/// A cancellable cache operation. A cancelled query does not call its completion.
public protocol ImageCacheOperation: AnyObject, Sendable {
    func cancel()
    var isCancelled: Bool { get }
}

/// The cancellable handle ``ImageCache`` returns for disk queries.
public final class ImageCacheQueryOperation: ImageCacheOperation {
    private let cancelled = Atomic(false)
    private let cancelHandler = Protected<(@Sendable () -> Void)?>(nil)

    /// A query operation not yet cancelled.
    public init() {}

    public func cancel() {
        guard !cancelled.exchange(true, ordering: .acquiringAndReleasing) else { return }
        cancelHandler.withLock { handler in
            defer { handler = nil }
            return handler
        }?()
    }

    public var isCancelled: Bool { cancelled.load(ordering: .acquiring) }

    /// Runs `handler` once when the operation is cancelled (at once when it already is), outside
    /// the operation's lock: how a query takes its queued read off the queue.
    func onCancel(_ handler: @escaping @Sendable () -> Void) {
        cancelHandler.withLock { $0 = handler }
        if isCancelled,
            let handler = cancelHandler.withLock({ current in
                defer { current = nil }
                return current
            })
        {
            handler()
        }
    }
}

/// A cache ``ImageManager`` can use: ours (``ImageCache``), a chain of several
/// (``ImageCachesManager``), or your own (SDWebImage 5's `SDImageCache` protocol).
///
/// Completions may run on any thread; implementations must be thread-safe.
public protocol ImageCaching: Sendable {
    /// The image in memory for `key`, answered on the calling thread; `nil` when it is not in
    /// memory or the cache cannot answer at once. ``ImageManager`` completes a load it answers
    /// synchronously, before `loadImage` returns (SDWebImage's memory hit). The default
    /// implementation answers `nil`: every load then asks ``queryImage(forKey:options:context:cacheType:completion:)``.
    func imageFromMemoryCache(forKey key: String) -> DecodedImage?

    /// Looks `key` up in the caches `cacheType` names. Returns `nil` when the completion already
    /// ran (a synchronous answer), else an operation that can cancel the lookup.
    @discardableResult
    func queryImage(
        forKey key: String,
        options: ImageOptions,
        context: ImageContext?,
        cacheType: ImageCacheType,
        completion: @escaping @Sendable (ImageCacheQueryResult) -> Void
    ) -> (any ImageCacheOperation)?

    /// Stores an image and/or its bytes in the caches `cacheType` names. `completion` gets the
    /// error of a failed disk write.
    func store(
        _ image: DecodedImage?,
        data: Data?,
        forKey key: String,
        metadata: DiskCacheMetadata?,
        cacheType: ImageCacheType,
        completion: (@Sendable ((any Error)?) -> Void)?
    )

    /// Removes `key` from the caches `cacheType` names.
    func removeImage(forKey key: String, cacheType: ImageCacheType, completion: (@Sendable () -> Void)?)

    /// Where `key` is cached (`.none` when nowhere), looking in the caches `cacheType` names.
    func containsImage(
        forKey key: String,
        cacheType: ImageCacheType,
        completion: @escaping @Sendable (ImageCacheType) -> Void
    )

    /// Empties the caches `cacheType` names.
    func clear(cacheType: ImageCacheType, completion: (@Sendable () -> Void)?)

    /// Calls `completion` once every write, removal and cleanup asked for before this call has
    /// reached the disk (or failed). Call it before a process exits, or its last writes are lost.
    /// The default implementation, for caches that write synchronously, completes at once.
    func flush(completion: @escaping @Sendable () -> Void)

    /// Removes what has expired and trims to the size limits, then calls `completion` (SDWebImage's
    /// `deleteOldFiles`): what a long-running process calls now and then. The default
    /// implementation, for caches that expire nothing, completes at once.
    func removeExpired(completion: @escaping @Sendable () -> Void)
}

extension ImageCaching {
    public func imageFromMemoryCache(forKey key: String) -> DecodedImage? { nil }

    public func flush(completion: @escaping @Sendable () -> Void) { completion() }

    public func removeExpired(completion: @escaping @Sendable () -> Void) { completion() }

    /// Waits until what had expired is removed and the caches are within their size limits.
    public func removeExpired() async {
        await withHandOffContinuation { continuation in removeExpired { continuation.resume() } }
    }

    /// Waits until every write, removal and cleanup asked for before this call has finished.
    public func flush() async {
        await withHandOffContinuation { continuation in flush { continuation.resume() } }
    }
}

extension ImageCaching {
    /// The query as `async`; a cancelled Swift task cancels the lookup and gets a miss.
    public func queryImage(
        forKey key: String,
        options: ImageOptions = [],
        context: ImageContext? = nil,
        cacheType: ImageCacheType = .all
    ) async -> ImageCacheQueryResult {
        await withCancellableCallback { continuation -> (any ImageCacheOperation)? in
            let resumed = Atomic(false)
            let finish: @Sendable (ImageCacheQueryResult) -> Void = { result in
                if resumed.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged {
                    continuation.resume(returning: result)
                }
            }
            let operation = queryImage(
                forKey: key,
                options: options,
                context: context,
                cacheType: cacheType,
                completion: finish
            )
            // A cancelled query never calls `finish`, so cancelling answers the waiter with a miss.
            return operation.map { CancelAnswering(operation: $0, answer: finish) }
        } cancel: { operation in
            operation.cancel()
        }
    }

    /// Stores as `async`; throws the disk write's error.
    public func store(
        _ image: DecodedImage?,
        data: Data?,
        forKey key: String,
        metadata: DiskCacheMetadata? = nil,
        cacheType: ImageCacheType = .all
    ) async throws {
        let error: (any Error)? = await withHandOffContinuation { continuation in
            store(image, data: data, forKey: key, metadata: metadata, cacheType: cacheType) { error in
                continuation.resume(returning: error)
            }
        }
        if let error { throw error }
    }

    /// Removes as `async`.
    public func removeImage(forKey key: String, cacheType: ImageCacheType = .all) async {
        await withHandOffContinuation { continuation in
            removeImage(forKey: key, cacheType: cacheType) { continuation.resume() }
        }
    }

    /// Where `key` is cached, as `async`.
    public func containsImage(forKey key: String, cacheType: ImageCacheType = .all) async -> ImageCacheType {
        await withHandOffContinuation { continuation in
            containsImage(forKey: key, cacheType: cacheType) { continuation.resume(returning: $0) }
        }
    }

    /// Empties as `async`.
    public func clear(cacheType: ImageCacheType = .all) async {
        await withHandOffContinuation { continuation in clear(cacheType: cacheType) { continuation.resume() } }
    }
}

/// Wraps a query operation so cancelling it also answers the `async` waiter with a miss.
private final class CancelAnswering: ImageCacheOperation {
    let operation: any ImageCacheOperation
    let answer: @Sendable (ImageCacheQueryResult) -> Void

    init(operation: any ImageCacheOperation, answer: @escaping @Sendable (ImageCacheQueryResult) -> Void) {
        self.operation = operation
        self.answer = answer
    }

    func cancel() {
        operation.cancel()
        answer(.miss)
    }

    var isCancelled: Bool { operation.isCancelled }
}
