import Foundation
import Logging
import Synchronization
@_spi(WebImageInternals) import WebImageCoders
import WebImageHTTP

/// A memory cache in front of a disk cache (SDImageCache): the cache ``ImageManager`` uses.
///
/// - Memory: a ``MemoryCache`` (LRU, cost and count limits, a lower watermark, and a weak map of
///   evicted images still in use).
/// - Disk: a ``DiskCache`` folder; every disk operation runs off the caller's thread and the
///   event loops: writes, removals and cleanups on the cache's own serial queue, in order; reads
///   on the bounded, priority-aware ``Configuration/diskReadQueue`` (a read never waits behind
///   writes, and a query cancelled while it waits gives its place up). Bytes queued for writing are
///   readable at once. Disk hits are decoded on the context's ``ImageWorkQueue`` within its
///   ``DecodingMemoryBudget``, and promoted to memory unless the context's `storeCacheType`
///   leaves memory out.
/// - Completions: a memory answer runs the completion before the call returns; disk answers and
///   store/remove completions run on a background queue.
///
/// ```swift
/// let cache = ImageCache(namespace: "avatars")
/// cache.store(image, data: bytes, forKey: url.absoluteString)
/// let result = await cache.queryImage(forKey: url.absoluteString)
/// ```
public final class ImageCache: ImageCaching {
    /// How an ``ImageCache`` behaves; the defaults are documented on each property.
    public struct Configuration: Sendable {
        /// Memory cache limits. Default: a quarter of physical memory (at most 1 GiB), purged to
        /// 60 %; no count limit.
        public var memoryLimits = MemoryCache.Limits()
        /// Keep memory images at all. Default `true`.
        public var cachesImagesInMemory = true
        /// Find evicted images again while something else still holds them. Default `true`.
        public var keepsEvictedImagesInUse = true
        /// Purge the memory cache to its watermark when the process's cgroup nears its memory
        /// limit (``MemoryPressureMonitor/shared``). Default `true`.
        public var purgesOnMemoryPressure = true
        /// Use the disk at all. Default `true`.
        public var usesDiskCache = true
        /// Disk expiry, size limit, durability and clock. Defaults: a week by modification date,
        /// 1 GiB trimmed to half, no fsync.
        public var disk = DiskCache.Configuration()
        /// Time between automatic expired-file cleanups; `nil` turns them off. Default one
        /// hour (the first runs an interval after the cache opens, never at open).
        public var cleanupInterval: Duration? = .seconds(60 * 60)
        /// Receives failed disk writes at `.warning` and cleanups at `.debug`. Default: none.
        public var logger = Logger.quiet("swift-web-image.cache")
        /// Called with the key and the cause when a disk write fails (full disk, read-only
        /// folder, or refused by ``maximumQueuedWriteBytes``), whoever asked for the write; runs
        /// on the cache's write queue (on the storing thread for a refused write), so keep it
        /// short. The image stays in memory. Default: none.
        public var diskWriteFailureHandler: (@Sendable (_ key: String, _ error: any Error) -> Void)?
        /// Where disk reads run, at the query's priority (`highPriority`, `lowPriority`).
        /// Default: ``ImageWorkQueue/diskReading`` (two reads at once, shared by every cache and
        /// `file://` loads); give a cache its own queue to size it apart.
        public var diskReadQueue: ImageWorkQueue = .diskReading
        /// The most bytes queued for disk writes at once. Writes run at background priority, so
        /// loads get the CPU first; if the disk falls this far behind, further disk writes are
        /// refused (the store's completion and ``diskWriteFailureHandler`` get the error; memory
        /// stores still happen) rather than holding ever more bytes. Default 256 MiB.
        public var maximumQueuedWriteBytes = 256 << 20

        /// The default configuration.
        public init() {}
    }

    /// The process-wide cache: namespace `default` under ``defaultRootDirectory``.
    public static let shared = ImageCache(namespace: "default")

    /// `$XDG_CACHE_HOME/webimage`, else `~/.cache/webimage`.
    public static var defaultRootDirectory: URL {
        let environment = ProcessInfo.processInfo.environment
        if let xdg = environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") {
            return URL(fileURLWithPath: xdg, isDirectory: true).appendingPathComponent("webimage", isDirectory: true)
        }
        return FileManager.default.homeDirectoryForCurrentUser
            .appendingPathComponent(".cache/webimage", isDirectory: true)
    }

    /// The configuration the cache was made with.
    public let configuration: Configuration
    /// The memory half.
    public let memoryCache: MemoryCache
    /// The disk half (used from the cache's own queues).
    public let diskCache: DiskCache
    /// Serial: writes, removals and cleanups run in the order they were asked for.
    private let writeQueue: DispatchQueue
    /// Whether the first write has queued the sweep of orphaned temporary files.
    private let sweptTemporaryFiles = Atomic(false)
    /// Bytes queued for writing, readable at once: a query right after a store finds them.
    private let pendingWrites = Protected(PendingWrites())

    private struct PendingWrites {
        var entries: [String: (data: Data, metadata: DiskCacheMetadata, generation: UInt64)] = [:]
        var nextGeneration: UInt64 = 0
        /// Bytes of every write queued and not yet done (bytes given, or the bitmap to encode).
        var queuedBytes = 0
    }
    private let cleanupTask: Task<Void, Never>?

    /// A cache in the folder `namespace` under `root` (default ``defaultRootDirectory``).
    /// Characters other than letters, digits, `.`, `_` and `-` in `namespace` become `_`, so it
    /// always names one folder directly under the root.
    public convenience init(
        namespace: String,
        root: URL? = nil,
        configuration: Configuration = Configuration()
    ) {
        self.init(
            directory: (root ?? Self.defaultRootDirectory)
                .appendingPathComponent(Self.folderName(forNamespace: namespace), isDirectory: true),
            configuration: configuration
        )
    }

    /// A cache whose disk entries live directly in `directory` (created on the first write).
    public init(directory: URL, configuration: Configuration = Configuration()) {
        self.configuration = configuration
        memoryCache = MemoryCache(
            limits: configuration.memoryLimits,
            keepsEvictedImagesInUse: configuration.keepsEvictedImagesInUse
        )
        diskCache = DiskCache(directory: directory, configuration: configuration.disk)
        if configuration.purgesOnMemoryPressure { MemoryPressureMonitor.shared.watch(memoryCache) }
        // Background priority: loads (decoding, the network) get the CPU before the cache's writes;
        // `maximumQueuedWriteBytes` bounds what waits meanwhile.
        writeQueue = DispatchQueue(label: "swift-web-image.ImageCache.write", qos: .background)
        if let interval = configuration.cleanupInterval, interval > .zero, configuration.usesDiskCache {
            let disk = diskCache
            let queue = writeQueue
            let logger = configuration.logger
            let memory = memoryCache
            cleanupTask = Task.detached(priority: .background) {
                while !Task.isCancelled {
                    try? await Task.sleep(for: interval)
                    if Task.isCancelled { break }
                    memory.removeIdleImages()
                    queue.async {
                        let result = disk.removeExpiredEntries()
                        logger.debug(
                            "disk cleanup",
                            metadata: [
                                "expired": "\(result.expiredRemoved)", "trimmed": "\(result.trimmedRemoved)",
                                "remaining": "\(result.remainingCount)",
                            ]
                        )
                    }
                }
            }
        } else {
            cleanupTask = nil
        }
    }

    deinit { cleanupTask?.cancel() }

    static func folderName(forNamespace namespace: String) -> String {
        let cleaned = String(
            namespace.map { $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) ? $0 : "_" }
        )
        if cleaned.isEmpty || cleaned.allSatisfy({ $0 == "." }) { return "_" + cleaned }
        return cleaned
    }

    // MARK: Store

    /// Stores `image` in memory and `data` on disk (SDImageCache `storeImage:imageData:forKey:`).
    /// With `image` but no `data`, the disk gets the image re-encoded in its own format (PNG when
    /// that format has no encoder). `completion` runs after the disk write, with its error.
    public func store(
        _ image: DecodedImage?,
        data: Data?,
        forKey key: String,
        metadata: DiskCacheMetadata? = nil,
        cacheType: ImageCacheType = .all,
        completion: (@Sendable ((any Error)?) -> Void)? = nil
    ) {
        if cacheType.includesMemory, configuration.cachesImagesInMemory, let image {
            memoryCache.setImage(image, forKey: key, expiresAt: Self.memoryExpiry(of: metadata))
        }
        guard cacheType.includesDisk, configuration.usesDiskCache, image != nil || data != nil else {
            completion?(nil)
            return
        }
        var metadata = metadata ?? DiskCacheMetadata()
        if let data, metadata.contentType == nil { metadata.contentType = ImageFormat(sniffing: data).mimeType }
        let size = data?.count ?? image?.cost ?? 0
        let limit = configuration.maximumQueuedWriteBytes
        let admission = pendingWrites.withLock { pending -> (admitted: Bool, queued: Int, generation: UInt64?) in
            guard pending.queuedBytes == 0 || pending.queuedBytes + size <= limit else {
                return (false, pending.queuedBytes, nil)
            }
            pending.queuedBytes += size
            guard let data else { return (true, pending.queuedBytes, nil) }
            pending.nextGeneration += 1
            pending.entries[key] = (data, metadata, pending.nextGeneration)
            return (true, pending.queuedBytes, pending.nextGeneration)
        }
        guard admission.admitted else {
            let error = DiskCacheError(
                "queue write",
                path: diskCache.fileURL(forKey: key).path,
                message: "\(admission.queued >> 20) MiB of disk writes already waiting (maximumQueuedWriteBytes)"
            )
            configuration.logger.warning("disk write refused", metadata: ["key": "\(key)", "error": "\(error)"])
            configuration.diskWriteFailureHandler?(key, error)
            completion?(error)
            return
        }
        let generation = admission.generation
        // Temporary files of writers killed mid-write go before this cache's first write: a
        // folder that is only read is never scanned (opening a cache stays free).
        if !sweptTemporaryFiles.exchange(true, ordering: .relaxed) {
            writeQueue.async { [diskCache] in diskCache.removeOrphanedTemporaryFiles() }
        }
        // The queued write holds the image only when it must encode it: a decoded photo is tens of
        // megabytes, its bytes a few hundred kilobytes.
        let toEncode = data == nil ? image : nil
        writeQueue.async { [diskCache, pendingWrites, generation, metadata, configuration, size] in
            var metadata = metadata
            defer {
                pendingWrites.withLock { pending in
                    pending.queuedBytes -= size
                    if let generation, pending.entries[key]?.generation == generation { pending.entries[key] = nil }
                }
            }
            do {
                guard let bytes = try data ?? toEncode?.encodedForDisk() else { return }
                if metadata.contentType == nil { metadata.contentType = ImageFormat(sniffing: bytes).mimeType }
                try diskCache.store(bytes, forKey: key, metadata: metadata)
                completion?(nil)
            } catch {
                configuration.logger.warning("disk write failed", metadata: ["key": "\(key)", "error": "\(error)"])
                configuration.diskWriteFailureHandler?(key, error)
                completion?(error)
            }
        }
    }

    /// Stores in memory and, when `toDisk`, on disk (SDImageCache's `toDisk:` form).
    public func store(
        _ image: DecodedImage?,
        data: Data?,
        forKey key: String,
        toDisk: Bool,
        completion: (@Sendable ((any Error)?) -> Void)? = nil
    ) {
        store(image, data: data, forKey: key, cacheType: toDisk ? .all : .memory, completion: completion)
    }

    // MARK: Query

    /// Looks `key` up: memory first, then disk (decoded with the context's thumbnail and
    /// scale-down settings and the options' `decodeFirstFrameOnly`, promoted to memory unless
    /// `storeCacheType` leaves memory out). `avoidDecodeImage` returns disk bytes undecoded;
    /// `queryMemoryData` also reads the bytes on a memory hit. A memory image decoded another way
    /// than the options ask (``ImageOptions/decodeFramesOnDemand``) counts as a miss there.
    @discardableResult
    public func queryImage(
        forKey key: String,
        options: ImageOptions,
        context: ImageContext?,
        cacheType: ImageCacheType,
        completion: @escaping @Sendable (ImageCacheQueryResult) -> Void
    ) -> (any ImageCacheOperation)? {
        let memoryImage =
            cacheType.includesMemory ? memoryCache.image(forKey: key).flatMap { $0.serves(options) ? $0 : nil } : nil
        if let memoryImage, !options.contains(.queryMemoryData) {
            completion(ImageCacheQueryResult(image: memoryImage, cacheType: .memory))
            return nil
        }
        guard cacheType.includesDisk || memoryImage != nil, configuration.usesDiskCache || memoryImage != nil else {
            completion(.miss)
            return nil
        }
        let operation = ImageCacheQueryOperation()
        let context = context ?? ImageContext()
        let read = configuration.diskReadQueue.enqueue(priority: ImageWorkQueue.Priority(options)) { [self] in
            guard !operation.isCancelled else { return }
            let found = configuration.usesDiskCache ? diskDataAndMetadata(forKey: key) : nil
            if let memoryImage {
                completion(
                    ImageCacheQueryResult(
                        image: memoryImage,
                        data: found?.data,
                        cacheType: .memory,
                        metadata: found?.metadata
                    )
                )
                return
            }
            guard let (data, metadata) = found else {
                completion(.miss)
                return
            }
            if options.contains(.avoidDecodeImage) {
                completion(ImageCacheQueryResult(data: data, cacheType: .disk, metadata: metadata))
                return
            }
            context.decode(data, options: options, isCancelled: { operation.isCancelled }) { [self] result in
                guard let result else { return }
                let image = try? result.get()
                if let image { promote(image, forKey: key, context: context, metadata: metadata) }
                guard !operation.isCancelled else { return }
                completion(ImageCacheQueryResult(image: image, data: data, cacheType: .disk, metadata: metadata))
            }
        }
        operation.onCancel { read.cancel() }
        return operation
    }

    /// Bytes waiting to be written, else the disk entry.
    private func diskDataAndMetadata(forKey key: String) -> (data: Data, metadata: DiskCacheMetadata)? {
        if let pending = pendingWrites.withLock({ $0.entries[key] }) { return (pending.data, pending.metadata) }
        return diskCache.dataAndEntry(forKey: key).map { ($0.data, $0.entry.metadata) }
    }

    /// Puts a disk hit's image in memory, unless the context's store type leaves memory out or
    /// its HTTP freshness has ended.
    private func promote(
        _ image: DecodedImage,
        forKey key: String,
        context: ImageContext,
        metadata: DiskCacheMetadata? = nil
    ) {
        guard context.storeCacheType.includesMemory, configuration.cachesImagesInMemory else { return }
        let expiry = Self.memoryExpiry(of: metadata)
        if let expiry, expiry <= Date() { return }
        memoryCache.setImage(image, forKey: key, expiresAt: expiry)
    }

    /// When an image stored with `metadata` leaves memory: when its response's explicit
    /// freshness (`max-age`, `Expires`, `no-cache`) ends. A response without it stays as long as
    /// the memory cache keeps any image (the heuristic freshness governs the disk entry only).
    static func memoryExpiry(of metadata: DiskCacheMetadata?) -> Date? {
        guard let freshness = metadata?.freshness else { return nil }
        guard freshness.isStorable else { return freshness.receivedDate }
        return freshness.isExplicit || freshness.noCache ? freshness.freshUntil : nil
    }

    /// The memory cache's image for `key` (no disk access).
    public func imageFromMemoryCache(forKey key: String) -> DecodedImage? { memoryCache.image(forKey: key) }

    /// Reads and decodes `key` from disk on the calling thread, promoting it to memory
    /// (SDImageCache `imageFromDiskCacheForKey:`). Blocking: keep it off event loops.
    public func imageFromDiskCache(
        forKey key: String,
        options: ImageOptions = [],
        context: ImageContext? = nil
    )
        -> DecodedImage?
    {
        guard let data = diskImageData(forKey: key) else { return nil }
        let context = context ?? ImageContext()
        guard let image = try? context.decodeWaiting(data, options: options).get() else { return nil }
        promote(image, forKey: key, context: context)
        return image
    }

    /// Memory, then disk, on the calling thread. An image in memory decoded another way than
    /// `options` ask (frames on demand or whole: ``ImageOptions/decodeFramesOnDemand``) is
    /// decoded again from disk.
    public func imageFromCache(
        forKey key: String,
        options: ImageOptions = [],
        context: ImageContext? = nil
    )
        -> DecodedImage?
    {
        if let image = imageFromMemoryCache(forKey: key), image.serves(options) { return image }
        return imageFromDiskCache(forKey: key, options: options, context: context)
    }

    /// The disk bytes for `key`, read on the calling thread.
    public func diskImageData(forKey key: String) -> Data? {
        guard configuration.usesDiskCache else { return nil }
        return pendingWrites.withLock { $0.entries[key]?.data } ?? diskCache.data(forKey: key)
    }

    /// Whether the disk has `key`, checked on the calling thread.
    public func diskImageDataExists(forKey key: String) -> Bool {
        guard configuration.usesDiskCache else { return false }
        return pendingWrites.withLock { $0.entries[key] != nil } || diskCache.contains(key)
    }

    /// Whether the disk has `key`, checked on the disk read queue.
    public func diskImageExists(withKey key: String, completion: @escaping @Sendable (Bool) -> Void) {
        configuration.diskReadQueue.enqueue { [self] in completion(diskImageDataExists(forKey: key)) }
    }

    /// Whether the disk has `key`, checked on the disk read queue.
    public func diskImageExists(withKey key: String) async -> Bool {
        await withHandOffContinuation { continuation in
            diskImageExists(withKey: key) { continuation.resume(returning: $0) }
        }
    }

    /// The disk entry's metadata for `key` (its validators, stored date, extended data).
    public func diskEntry(forKey key: String) async -> DiskCacheEntry? {
        await onIOQueue { $0.diskCache.entry(forKey: key) }
    }

    // MARK: Flush

    /// Calls `completion` (on the write queue) once every disk write, removal and cleanup asked
    /// for before this call has finished. A process that exits without it loses the writes still
    /// queued; ``ImageManager/flush()`` and `webimage` call it before they end.
    public func flush(completion: @escaping @Sendable () -> Void) {
        writeQueue.async { completion() }
    }

    // MARK: Remove

    /// Removes `key` from memory and, when `fromDisk`, from disk.
    public func removeImage(forKey key: String, fromDisk: Bool = true, completion: (@Sendable () -> Void)? = nil) {
        removeImage(forKey: key, cacheType: fromDisk ? .all : .memory, completion: completion)
    }

    public func removeImage(forKey key: String, cacheType: ImageCacheType, completion: (@Sendable () -> Void)?) {
        if cacheType.includesMemory { memoryCache.removeImage(forKey: key) }
        guard cacheType.includesDisk else {
            completion?()
            return
        }
        pendingWrites.withLock { _ = $0.entries.removeValue(forKey: key) }
        writeQueue.async { [diskCache] in
            diskCache.remove(forKey: key)
            completion?()
        }
    }

    public func containsImage(
        forKey key: String,
        cacheType: ImageCacheType,
        completion: @escaping @Sendable (ImageCacheType) -> Void
    ) {
        if cacheType.includesMemory, memoryCache.contains(key) { return completion(.memory) }
        guard cacheType.includesDisk else { return completion(.none) }
        diskImageExists(withKey: key) { completion($0 ? .disk : .none) }
    }

    public func clear(cacheType: ImageCacheType, completion: (@Sendable () -> Void)?) {
        if cacheType.includesMemory { clearMemory() }
        guard cacheType.includesDisk else {
            completion?()
            return
        }
        clearDisk(completion: completion)
    }

    /// Empties the memory cache.
    public func clearMemory() { memoryCache.removeAll() }

    /// Empties the disk cache on the write queue.
    public func clearDisk(completion: (@Sendable () -> Void)? = nil) {
        pendingWrites.withLock { $0.entries.removeAll() }
        writeQueue.async { [diskCache] in
            diskCache.removeAll()
            completion?()
        }
    }

    /// Drops memory images idle past ``MemoryCache/Limits/maxIdleAge``, then
    /// ``deleteOldFiles(completion:)`` without its figures.
    public func removeExpired(completion: @escaping @Sendable () -> Void) {
        memoryCache.removeIdleImages()
        deleteOldFiles { _ in completion() }
    }

    /// Removes expired entries and trims to the size limit, on the write queue.
    public func deleteOldFiles(completion: (@Sendable (DiskCache.CleanupResult) -> Void)? = nil) {
        writeQueue.async { [diskCache] in
            let result = diskCache.removeExpiredEntries()
            completion?(result)
        }
    }

    /// Removes expired entries and trims to the size limit.
    @discardableResult
    public func deleteOldFiles() async -> DiskCache.CleanupResult {
        await onIOQueue { $0.diskCache.removeExpiredEntries() }
    }

    /// Bytes on disk.
    public func totalDiskSize() async -> Int { await onIOQueue { $0.diskCache.totalSize } }

    /// Entries on disk.
    public func totalDiskCount() async -> Int { await onIOQueue { $0.diskCache.count } }

    private func onIOQueue<Result: Sendable>(_ body: @escaping @Sendable (ImageCache) -> Result) async -> Result {
        await withHandOffContinuation { continuation in
            writeQueue.async { [self] in continuation.resume(returning: body(self)) }
        }
    }
}
