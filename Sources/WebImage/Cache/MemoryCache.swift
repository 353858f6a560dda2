import Foundation
import WebImageCoders

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
/// Every method may be called from any thread; each takes one short lock.
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

        /// Limits; `nil` takes the defaults documented on each property.
        public init(costLimit: Int? = nil, costAfterPurge: Int? = nil, countLimit: Int = .max) {
            let limit = costLimit ?? Self.defaultCostLimit
            self.costLimit = max(0, limit)
            self.costAfterPurge = min(max(0, costAfterPurge ?? limit / 10 * 6), max(0, limit))
            self.countLimit = max(0, countLimit)
        }

        /// A quarter of ``SystemMemory/limit`` (the cgroup's limit when lower than RAM), at most 1 GiB.
        public static var defaultCostLimit: Int {
            Int(min(SystemMemory.current.limit / 4, 1 << 30))
        }
    }

    private struct Node {
        var key: String
        var image: DecodedImage?
        var cost: Int
        var newer: Int
        var older: Int
    }

    /// The LRU list lives in an array of nodes linked by index: moving an entry touches a few
    /// integers and no reference counts.
    private struct Store {
        var limits: Limits
        var keepsEvicted: Bool
        var index: [String: Int] = [:]
        var nodes: [Node] = []
        var free: [Int] = []
        var newest = -1
        var oldest = -1
        var totalCost = 0
        /// Evicted images, held weakly (by their storage) until their last holder lets go.
        var evicted: [String: WeakImage] = [:]
        var evictedSweepThreshold = 64

        mutating func unlink(_ slot: Int) {
            let (newer, older) = (nodes[slot].newer, nodes[slot].older)
            if newer >= 0 { nodes[newer].older = older } else { newest = older }
            if older >= 0 { nodes[older].newer = newer } else { oldest = newer }
        }

        mutating func pushNewest(_ slot: Int) {
            nodes[slot].newer = -1
            nodes[slot].older = newest
            if newest >= 0 { nodes[newest].newer = slot }
            newest = slot
            if oldest < 0 { oldest = slot }
        }

        mutating func lookUp(_ key: String) -> DecodedImage? {
            guard let slot = index[key] else { return nil }
            if slot != newest {
                unlink(slot)
                pushNewest(slot)
            }
            return nodes[slot].image
        }

        mutating func insert(_ image: DecodedImage, cost: Int, forKey key: String) {
            evicted[key] = nil
            if let slot = index[key] {
                totalCost += cost - nodes[slot].cost
                nodes[slot].image = image
                nodes[slot].cost = cost
                if slot != newest {
                    unlink(slot)
                    pushNewest(slot)
                }
            } else {
                let node = Node(key: key, image: image, cost: cost, newer: -1, older: -1)
                let slot: Int
                if let reused = free.popLast() {
                    nodes[reused] = node
                    slot = reused
                } else {
                    nodes.append(node)
                    slot = nodes.count - 1
                }
                index[key] = slot
                totalCost += cost
                pushNewest(slot)
            }
            purgeIfNeeded()
        }

        @discardableResult
        mutating func remove(_ key: String) -> DecodedImage? {
            evicted[key] = nil
            guard let slot = index.removeValue(forKey: key) else { return nil }
            return release(slot)
        }

        /// Unlinks a slot and frees it; returns its image.
        mutating func release(_ slot: Int) -> DecodedImage? {
            unlink(slot)
            let image = nodes[slot].image
            totalCost -= nodes[slot].cost
            nodes[slot].image = nil
            nodes[slot].key = ""
            free.append(slot)
            return image
        }

        mutating func evictOldest() {
            let slot = oldest
            let key = nodes[slot].key
            index[key] = nil
            if let image = release(slot), keepsEvicted { evicted[key] = WeakImage(image) }
        }

        mutating func purgeToWatermark() {
            while totalCost > limits.costAfterPurge && oldest >= 0 { evictOldest() }
        }

        mutating func purgeIfNeeded() {
            if totalCost > limits.costLimit { purgeToWatermark() }
            while index.count > limits.countLimit && oldest >= 0 { evictOldest() }
            if evicted.count > evictedSweepThreshold {
                evicted = evicted.filter { $0.value.isAlive }
                evictedSweepThreshold = max(64, evicted.count * 2)
            }
        }

        mutating func removeAll(keepingEvicted: Bool) {
            if keepingEvicted && keepsEvicted {
                for slot in index.values {
                    if let image = nodes[slot].image { evicted[nodes[slot].key] = WeakImage(image) }
                }
            } else {
                evicted.removeAll()
            }
            index.removeAll()
            nodes.removeAll()
            free.removeAll()
            newest = -1
            oldest = -1
            totalCost = 0
        }
    }

    private let store: Protected<Store>

    /// A cache with `limits`; `keepsEvictedImagesInUse` turns the weak map on (default).
    public init(limits: Limits = Limits(), keepsEvictedImagesInUse: Bool = true) {
        store = Protected(Store(limits: limits, keepsEvicted: keepsEvictedImagesInUse))
    }

    /// The current limits. Lowering them purges at once.
    public var limits: Limits {
        get { store.withLock { $0.limits } }
        set {
            store.withLock { store in
                store.limits = newValue
                store.purgeIfNeeded()
            }
        }
    }

    /// The image for `key`, marking it most recently used; an evicted image still held elsewhere
    /// is put back.
    public func image(forKey key: String) -> DecodedImage? {
        store.withLock { store in
            if let image = store.lookUp(key) { return image }
            guard let revived = store.evicted[key]?.image else { return nil }
            store.insert(revived, cost: revived.cost, forKey: key)
            return revived
        }
    }

    /// Whether `key` has an image, without changing its recency.
    public func contains(_ key: String) -> Bool {
        store.withLock { $0.index[key] != nil || $0.evicted[key]?.isAlive == true }
    }

    /// Stores `image` under `key` (replacing any other) and purges if the limits are passed.
    /// `cost` defaults to the image's bytes.
    public func setImage(_ image: DecodedImage, forKey key: String, cost: Int? = nil) {
        let cost = max(0, cost ?? image.cost)
        store.withLock { $0.insert(image, cost: cost, forKey: key) }
    }

    /// Removes and returns the image for `key`.
    @discardableResult
    public func removeImage(forKey key: String) -> DecodedImage? { store.withLock { $0.remove(key) } }

    /// Removes every image, the weakly held ones too.
    public func removeAll() { store.withLock { $0.removeAll(keepingEvicted: false) } }

    /// Empties the cache under memory pressure: images still in use elsewhere stay findable
    /// (weakly), the rest are freed.
    public func handleMemoryPressure() { store.withLock { $0.removeAll(keepingEvicted: true) } }

    /// Purges least recently used images down to ``Limits/costAfterPurge``, as an insertion over
    /// the limit does: what ``MemoryPressureMonitor`` asks of the caches.
    public func purgeToWatermark() { store.withLock { $0.purgeToWatermark() } }

    /// Bytes held by the cached images.
    public var totalCost: Int { store.withLock { $0.totalCost } }

    /// Images held (not counting evicted ones held elsewhere).
    public var count: Int { store.withLock { $0.index.count } }

    /// Keys from most to least recently used.
    public var keysByRecency: [String] {
        store.withLock { store in
            var keys: [String] = []
            keys.reserveCapacity(store.index.count)
            var slot = store.newest
            while slot >= 0 {
                keys.append(store.nodes[slot].key)
                slot = store.nodes[slot].older
            }
            return keys
        }
    }
}

/// An image held by its storage reference, weakly.
private struct WeakImage {
    weak var storage: DecodedImage.Storage?

    init(_ image: DecodedImage) { storage = image.storage }

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
