import Foundation
import Synchronization
@_spi(WebImageInternals) import WebImageCoders

/// A thread-safe least-recently-used image cache with a cost limit and a count limit
/// (SDMemoryCache and AFAutoPurgingImageCache).
///
/// Cost is `DecodedImage.cost`: the bytes of every frame. When an insertion takes the cache
/// over ``Limits/costLimit`` it purges, least recently used first, down to
/// ``Limits/costAfterPurge`` (AFNetworking's `preferredMemoryUsageAfterPurge`); over
/// ``Limits/countLimit`` it purges down to the count limit.
///
/// With `keepsEvictedImagesInUse` (default on), an evicted image that some copy still holds
/// elsewhere is found again by ``image(forKey:)`` and put back (SDWebImage 5's weak cache).
/// The evicted image costs nothing extra: it is the same storage its holder keeps alive.
///
/// Every method may be called from any thread. Entries are spread over shards by key, each with
/// its own short lock, so lookups from several threads scale; recency across shards is ordered
/// by each entry's last-use time (the monotonic clock), so eviction stays least recently used
/// first over the whole cache.
public final class MemoryCache: Sendable {
    /// Size limits of a ``MemoryCache``.
    public struct Limits: Sendable, Hashable {
        /// The most bytes the cached images may take. Default: a quarter of the memory this
        /// process may use (``SystemMemory/limit``: the cgroup's limit when lower than RAM), at
        /// most 1 GiB.
        public var costLimit: Int
        /// What a purge brings the cost down to. Default: 60 % of `costLimit`.
        public var costAfterPurge: Int
        /// The most images held. Default: no limit.
        public var countLimit: Int
        /// How long an image may go unused before it is dropped (Kingfisher's memory
        /// expiration; SDWebImage's seed text: what was not used in the last 30 minutes). A lookup
        /// of an idle image misses and removes it; stores and ``MemoryCache/removeIdleImages()``
        /// free the rest. `nil` (default): no age limit.
        public var maxIdleAge: Duration?

        /// Limits; `nil` takes the defaults documented on each property.
        public init(
            costLimit: Int? = nil,
            costAfterPurge: Int? = nil,
            countLimit: Int = .max,
            maxIdleAge: Duration? = nil
        ) {
            let limit = costLimit ?? Self.defaultCostLimit
            self.costLimit = max(0, limit)
            self.costAfterPurge = min(max(0, costAfterPurge ?? limit / 10 * 6), max(0, limit))
            self.countLimit = max(0, countLimit)
            self.maxIdleAge = maxIdleAge.map { max($0, .zero) }
        }

        /// ``maxIdleAge`` in nanoseconds; 0 when there is none.
        var maxIdleNanoseconds: UInt64 {
            guard let maxIdleAge else { return 0 }
            let (seconds, attoseconds) = maxIdleAge.components
            let nanoseconds = Double(seconds) * 1e9 + Double(attoseconds) / 1e9
            return nanoseconds >= Double(UInt64.max / 2) ? UInt64.max / 2 : max(1, UInt64(nanoseconds))
        }

        /// A quarter of ``SystemMemory/limit`` (the cgroup's limit when lower than RAM), at most 1 GiB.
        public static var defaultCostLimit: Int {
            Int(min(SystemMemory.current.limit / 4, 1 << 30))
        }
    }

    /// Shards by key hash, each with its own lock and LRU list: lookups of different keys from
    /// different threads rarely meet on one lock.
    private let shards: MemoryCacheShards
    private let shardMask: Int
    private let keepsEvicted: Bool
    private let currentLimits: Protected<Limits>
    /// ``Limits/maxIdleAge`` in nanoseconds (0: none), read by every lookup without a lock.
    private let maxIdleNanoseconds = Atomic<UInt64>(0)
    /// The shards' totals, kept beside them so limits are checked without visiting each shard.
    private let totalCostCounter = Atomic<Int>(0)
    private let countCounter = Atomic<Int>(0)
    /// One purge at a time (taken before any shard's lock, never inside one); counts the purges.
    /// Not `Protected(())`: ThreadSanitizer reports accesses to a zero-sized value under the lock
    /// as races (it saw them at the object's address without the mutex).
    private let purging = Protected(0)

    /// A cache with `limits`; `keepsEvictedImagesInUse` turns the weak map on (default).
    public init(limits: Limits = Limits(), keepsEvictedImagesInUse: Bool = true) {
        currentLimits = Protected(limits)
        maxIdleNanoseconds.store(limits.maxIdleNanoseconds, ordering: .relaxed)
        keepsEvicted = keepsEvictedImagesInUse
        shards = MemoryCacheShards(count: Self.shardCount, keepsEvicted: keepsEvictedImagesInUse)
        shardMask = Self.shardCount - 1
    }

    /// Enough shards that two threads seldom want the same one (a power of two).
    private static let shardCount = 16

    private func shard(for key: MemoryCacheShard.Key) -> Int { key.hash & shardMask }

    /// The current limits. Lowering them purges at once.
    public var limits: Limits {
        get { currentLimits.withLock { $0 } }
        set {
            currentLimits.withLock { $0 = newValue }
            maxIdleNanoseconds.store(newValue.maxIdleNanoseconds, ordering: .relaxed)
            purgeIfNeeded()
        }
    }

    /// The image for `key`, marking it most recently used; an evicted image still held elsewhere
    /// is put back. An image past its expiry, or idle longer than ``Limits/maxIdleAge``, is
    /// removed, and the lookup misses.
    public func image(forKey key: String) -> DecodedImage? {
        let key = MemoryCacheShard.Key(key)
        let cutoff = idleCutoff()
        let (image, change) = shards.withLock(shard(for: key)) { $0.lookUp(key, idleBefore: cutoff) }
        if change != .none { apply(change) }
        return image
    }

    /// Whether `key` has an image, without changing its recency.
    public func contains(_ key: String) -> Bool {
        let key = MemoryCacheShard.Key(key)
        return shards.withLock(shard(for: key)) { $0.index[key] != nil || $0.evicted[key]?.isAlive == true }
    }

    /// Stores `image` under `key` (replacing any other) and purges if the limits are passed.
    /// `cost` defaults to the image's bytes. An image costing more than the whole
    /// ``Limits/costLimit`` is not kept at all, not even weakly (NSCache's rule): the key's
    /// previous image is removed. From `expiresAt` on (default: never) lookups miss and drop it:
    /// how an HTTP response's freshness reaches memory.
    public func setImage(_ image: DecodedImage, forKey key: String, cost: Int? = nil, expiresAt: Date? = nil) {
        let cost = max(0, cost ?? image.cost)
        guard cost <= limits.costLimit else {
            removeImage(forKey: key)
            return
        }
        let key = MemoryCacheShard.Key(key)
        let expiry = expiresAt?.timeIntervalSince1970 ?? .infinity
        let cutoff = idleCutoff()
        apply(
            shards.withLock(shard(for: key)) { store in
                let inserted = store.insert(image, cost: cost, expiry: expiry, forKey: key)
                let idle = store.removeIdle(before: cutoff)
                return MemoryCacheShard.Change(cost: inserted.cost + idle.cost, count: inserted.count + idle.count)
            }
        )
    }

    /// Removes every image idle longer than ``Limits/maxIdleAge`` (none without one): what
    /// ``ImageCache/removeExpired(completion:)`` and its cleanup timer call.
    public func removeIdleImages() {
        let cutoff = idleCutoff()
        guard cutoff > 0 else { return }
        for shard in 0..<shards.count {
            apply(shards.withLock(shard) { $0.removeIdle(before: cutoff) }, purges: false)
        }
    }

    /// Last uses before this monotonic instant are too old; 0 without an age limit.
    private func idleCutoff() -> UInt64 {
        let age = maxIdleNanoseconds.load(ordering: .relaxed)
        guard age > 0 else { return 0 }
        let now = monotonicNanoseconds()
        return now > age ? now - age : 0
    }

    /// Removes and returns the image for `key`.
    @discardableResult
    public func removeImage(forKey key: String) -> DecodedImage? {
        let key = MemoryCacheShard.Key(key)
        let (image, change) = shards.withLock(shard(for: key)) { $0.remove(key) }
        apply(change)
        return image
    }

    /// Removes every image, the weakly held ones too.
    public func removeAll() {
        for shard in 0..<shards.count {
            apply(shards.withLock(shard) { $0.removeAll(keepingEvicted: false) }, purges: false)
        }
    }

    /// Empties the cache under memory pressure: images still in use elsewhere stay findable
    /// (weakly), the rest are freed.
    public func handleMemoryPressure() {
        for shard in 0..<shards.count {
            apply(shards.withLock(shard) { $0.removeAll(keepingEvicted: true) }, purges: false)
        }
    }

    /// Purges least recently used images down to ``Limits/costAfterPurge``, as an insertion over
    /// the limit does: what ``MemoryPressureMonitor`` asks of the caches.
    public func purgeToWatermark() {
        let limits = self.limits
        purge(downToCost: limits.costAfterPurge, count: limits.countLimit)
    }

    /// Bytes held by the cached images.
    public var totalCost: Int { totalCostCounter.load(ordering: .relaxed) }

    /// Images held (not counting evicted ones held elsewhere).
    public var count: Int { countCounter.load(ordering: .relaxed) }

    /// Keys from most to least recently used.
    public var keysByRecency: [String] {
        var entries: [(stamp: UInt64, key: String)] = []
        for shard in 0..<shards.count { entries += shards.withLock(shard) { $0.entriesByRecency() } }
        return entries.sorted { $0.stamp > $1.stamp }.map(\.key)
    }

    // MARK: Limits

    private func apply(_ change: MemoryCacheShard.Change, purges: Bool = true) {
        guard change != .none else { return }
        totalCostCounter.add(change.cost, ordering: .relaxed)
        countCounter.add(change.count, ordering: .relaxed)
        if purges && (change.cost > 0 || change.count > 0) { purgeIfNeeded() }
    }

    private func purgeIfNeeded() {
        let limits = self.limits
        if totalCost > limits.costLimit {
            purge(downToCost: limits.costAfterPurge, count: limits.countLimit)
        } else if count > limits.countLimit {
            purge(downToCost: .max, count: limits.countLimit)
        }
    }

    /// Evicts the least recently used image of all shards (each shard's oldest, compared by
    /// their last-use stamps) until the cost and count are at most the targets.
    private func purge(downToCost costTarget: Int, count countTarget: Int) {
        purging.withLock { purges in
            purges += 1
            while totalCost > costTarget || count > countTarget {
                var oldest: (shard: Int, stamp: UInt64)?
                for shard in 0..<shards.count {
                    if let stamp = shards.withLock(shard, { $0.oldestStamp }), stamp < oldest?.stamp ?? .max {
                        oldest = (shard, stamp)
                    }
                }
                guard let oldest else { return }
                let change = shards.withLock(oldest.shard) { $0.evictOldest() }
                totalCostCounter.add(change.cost, ordering: .relaxed)
                countCounter.add(change.count, ordering: .relaxed)
            }
        }
    }
}

/// An image held by its storage reference, weakly.
struct WeakImage {
    weak var storage: DecodedImage.Storage?
    /// The entry's expiry (seconds since 1970; infinity: never).
    let expiry: Double

    init(_ image: DecodedImage, expiry: Double) {
        storage = image.storage
        self.expiry = expiry
    }

    var image: DecodedImage? { storage.map { DecodedImage(storage: $0) } }
    var isAlive: Bool { storage != nil }
}

// MARK: AFAutoPurgingImageCache's calls

extension MemoryCache {
    /// Adds `image` under `identifier` (AFImageCache `addImage:withIdentifier:`).
    public func add(_ image: DecodedImage, withIdentifier identifier: String) {
        setImage(image, forKey: identifier)
    }

    /// The image under `identifier` (AFImageCache `imageWithIdentifier:`).
    public func image(withIdentifier identifier: String) -> DecodedImage? { image(forKey: identifier) }

    /// Removes the image under `identifier`; `true` when there was one.
    @discardableResult
    public func removeImage(withIdentifier identifier: String) -> Bool { removeImage(forKey: identifier) != nil }

    /// Removes every image; `true` when there was any.
    @discardableResult
    public func removeAllImages() -> Bool {
        let hadImages = count > 0
        removeAll()
        return hadImages
    }

    /// Adds `image` for a request's URL plus an optional identifier (a filter's name, say).
    public func add(_ image: DecodedImage, for url: URL, withAdditionalIdentifier identifier: String? = nil) {
        setImage(image, forKey: Self.key(for: url, additionalIdentifier: identifier))
    }

    /// The image for a request's URL plus an optional identifier.
    public func image(for url: URL, withAdditionalIdentifier identifier: String? = nil) -> DecodedImage? {
        image(forKey: Self.key(for: url, additionalIdentifier: identifier))
    }

    /// Removes the image for a request's URL plus an optional identifier.
    @discardableResult
    public func removeImage(for url: URL, withAdditionalIdentifier identifier: String? = nil) -> Bool {
        removeImage(forKey: Self.key(for: url, additionalIdentifier: identifier)) != nil
    }

    /// `url`, then `-identifier` when given (AFNetworking's key).
    static func key(for url: URL, additionalIdentifier: String?) -> String {
        guard let additionalIdentifier else { return url.absoluteString }
        return url.absoluteString + "-" + additionalIdentifier
    }
}
