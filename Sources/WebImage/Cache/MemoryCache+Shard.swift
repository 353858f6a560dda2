import Foundation
@_spi(WebImageInternals) import WebImageCoders

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The shards of a ``MemoryCache``, each an LRU list behind its own lock, in one allocation
/// where every shard starts on a 128-byte boundary: two shards never share a cache line that a
/// lookup writes, and reaching a shard touches no reference count shared between threads.
// Safety (@unchecked Sendable): the type is ~Copyable, so exactly one value owns `slots`: it is
// allocated and initialized in `init` and freed in `deinit`, when that owner (MemoryCache's
// `let`) goes away and no borrow can still be running. Each slot's `store` is read and written
// only inside `withLock`, between `pthread_mutex_lock` and `pthread_mutex_unlock` of that slot's
// own mutex (addressed in place, never moved or copied); `body` is non-escaping and gets the store
// `inout`, so no reference to it escapes the lock, and what it returns must be `Sendable` (the
// signature says so). The only bodies are MemoryCache's own store operations: no user hook or
// completion runs under a slot's lock. `count` and `stride` never change after `init`.
struct MemoryCacheShards: ~Copyable, @unchecked Sendable {
    private struct Slot {
        var mutex: pthread_mutex_t
        var store: MemoryCacheShard.Store
    }

    let count: Int
    private let slots: UnsafeMutableRawPointer
    private let stride: Int

    /// `count` empty shards.
    init(count: Int, keepsEvicted: Bool) {
        self.count = count
        stride = (MemoryLayout<Slot>.stride + 127) / 128 * 128
        slots = UnsafeMutableRawPointer.allocate(byteCount: stride * count, alignment: 128)
        slots.initializeMemory(as: UInt8.self, repeating: 0, count: stride * count)
        for index in 0..<count {
            let slot = slot(index)
            pthread_mutex_init(&slot.pointee.mutex, nil)
            (UnsafeMutableRawPointer(slot) + MemoryLayout<Slot>.offset(of: \Slot.store)!)
                .initializeMemory(
                    as: MemoryCacheShard.Store.self,
                    repeating: .init(keepsEvicted: keepsEvicted),
                    count: 1
                )
        }
    }

    private func slot(_ index: Int) -> UnsafeMutablePointer<Slot> {
        (slots + index * stride).assumingMemoryBound(to: Slot.self)
    }

    /// Runs `body` with shard `index`'s store, under its lock.
    func withLock<Result: Sendable>(_ index: Int, _ body: (inout MemoryCacheShard.Store) -> Result) -> Result {
        let slot = slot(index)
        pthread_mutex_lock(&slot.pointee.mutex)
        defer { pthread_mutex_unlock(&slot.pointee.mutex) }
        return body(&slot.pointee.store)
    }

    deinit {
        for index in 0..<count {
            let slot = slot(index)
            pthread_mutex_destroy(&slot.pointee.mutex)
            (UnsafeMutableRawPointer(slot) + MemoryLayout<Slot>.offset(of: \Slot.store)!)
                .assumingMemoryBound(to: MemoryCacheShard.Store.self).deinitialize(count: 1)
        }
        slots.deallocate()
    }
}

/// The parts of one ``MemoryCache`` shard.
enum MemoryCacheShard {
    /// A key with its hash computed once: the shard is chosen by it and its dictionaries use it.
    struct Key: Hashable, Sendable {
        let string: String
        let hash: Int

        init(_ string: String) {
            self.string = string
            hash = string.hashValue
        }

        static func == (lhs: Key, rhs: Key) -> Bool { lhs.hash == rhs.hash && lhs.string == rhs.string }
        func hash(into hasher: inout Hasher) { hasher.combine(hash) }
    }

    /// What an operation changed in the shard's totals.
    struct Change: Equatable {
        var cost: Int
        var count: Int
        static let none = Change(cost: 0, count: 0)
    }

    private struct Node {
        var key: Key
        var image: DecodedImage?
        var cost: Int
        /// When it stops being usable (seconds since 1970; infinity: never).
        var expiry: Double
        /// When it was last stored or looked up (monotonic nanoseconds, increasing per shard).
        var stamp: UInt64
        var newer: Int
        var older: Int
    }

    /// The LRU list lives in an array of nodes linked by index: moving an entry touches a few
    /// integers and no reference counts.
    struct Store {
        let keepsEvicted: Bool
        private(set) var index: [Key: Int] = [:]
        private var nodes: [Node] = []
        private var free: [Int] = []
        private var newest = -1
        private var oldest = -1
        private var lastStamp: UInt64 = 0
        private var totalCost = 0
        /// Evicted images, held weakly (by their storage) until their last holder lets go.
        var evicted: [Key: WeakImage] = [:]
        private var evictedSweepThreshold = 64

        init(keepsEvicted: Bool) { self.keepsEvicted = keepsEvicted }

        /// The last-use stamp of the shard's least recently used entry.
        var oldestStamp: UInt64? { oldest >= 0 ? nodes[oldest].stamp : nil }

        /// Now, on the monotonic clock, and later than any stamp this shard gave.
        private mutating func nextStamp() -> UInt64 {
            lastStamp = max(monotonicNanoseconds(), lastStamp &+ 1)
            return lastStamp
        }

        private mutating func unlink(_ slot: Int) {
            let (newer, older) = (nodes[slot].newer, nodes[slot].older)
            if newer >= 0 { nodes[newer].older = older } else { newest = older }
            if older >= 0 { nodes[older].newer = newer } else { oldest = newer }
        }

        private mutating func pushNewest(_ slot: Int) {
            nodes[slot].newer = -1
            nodes[slot].older = newest
            nodes[slot].stamp = nextStamp()
            if newest >= 0 { nodes[newest].newer = slot }
            newest = slot
            if oldest < 0 { oldest = slot }
        }

        /// Makes a listed slot the most recently used.
        private mutating func touch(_ slot: Int) {
            guard slot != newest else {
                nodes[slot].stamp = nextStamp()
                return
            }
            unlink(slot)
            pushNewest(slot)
        }

        /// The image for `key`, marked most recently used; an expired entry is removed instead
        /// (a weakly held one too) and the lookup misses.
        mutating func lookUp(_ key: Key, idleBefore cutoff: UInt64 = 0) -> (DecodedImage?, Change) {
            if let slot = index[key] {
                guard !Self.hasExpired(nodes[slot].expiry), nodes[slot].stamp >= cutoff else {
                    return (nil, remove(key).1)
                }
                touch(slot)
                return (nodes[slot].image, .none)
            }
            guard let weak = evicted[key] else { return (nil, .none) }
            guard !Self.hasExpired(weak.expiry), let revived = weak.image else {
                evicted[key] = nil
                return (nil, .none)
            }
            return (revived, insert(revived, cost: revived.cost, expiry: weak.expiry, forKey: key))
        }

        private static func hasExpired(_ expiry: Double) -> Bool {
            expiry != .infinity && Date().timeIntervalSince1970 >= expiry
        }

        mutating func insert(_ image: DecodedImage, cost: Int, expiry: Double, forKey key: Key) -> Change {
            evicted[key] = nil
            if let slot = index[key] {
                let change = Change(cost: cost - nodes[slot].cost, count: 0)
                totalCost += change.cost
                nodes[slot].image = image
                nodes[slot].cost = cost
                nodes[slot].expiry = expiry
                touch(slot)
                return change
            }
            let node = Node(key: key, image: image, cost: cost, expiry: expiry, stamp: 0, newer: -1, older: -1)
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
            sweepEvictedIfNeeded()
            return Change(cost: cost, count: 1)
        }

        mutating func remove(_ key: Key) -> (DecodedImage?, Change) {
            evicted[key] = nil
            guard let slot = index.removeValue(forKey: key) else { return (nil, .none) }
            let cost = nodes[slot].cost
            return (release(slot), Change(cost: -cost, count: -1))
        }

        /// Unlinks a slot and frees it; returns its image.
        private mutating func release(_ slot: Int) -> DecodedImage? {
            unlink(slot)
            let image = nodes[slot].image
            totalCost -= nodes[slot].cost
            nodes[slot].image = nil
            nodes[slot].key = Key("")
            free.append(slot)
            return image
        }

        /// Removes the entries last used before `cutoff` (monotonic nanoseconds; 0 removes none),
        /// least recently used first: they are gone, not kept weakly.
        mutating func removeIdle(before cutoff: UInt64) -> Change {
            var change = Change.none
            while oldest >= 0, nodes[oldest].stamp < cutoff {
                let slot = oldest
                change.cost -= nodes[slot].cost
                change.count -= 1
                index[nodes[slot].key] = nil
                evicted[nodes[slot].key] = nil
                _ = release(slot)
            }
            return change
        }

        /// Evicts the least recently used entry (kept weakly when that is on).
        mutating func evictOldest() -> Change {
            guard oldest >= 0 else { return .none }
            let slot = oldest
            let key = nodes[slot].key
            let (cost, expiry) = (nodes[slot].cost, nodes[slot].expiry)
            index[key] = nil
            if let image = release(slot), keepsEvicted { evicted[key] = WeakImage(image, expiry: expiry) }
            return Change(cost: -cost, count: -1)
        }

        private mutating func sweepEvictedIfNeeded() {
            guard evicted.count > evictedSweepThreshold else { return }
            evicted = evicted.filter { $0.value.isAlive }
            evictedSweepThreshold = max(64, evicted.count * 2)
        }

        mutating func removeAll(keepingEvicted: Bool) -> Change {
            if keepingEvicted && keepsEvicted {
                for slot in index.values {
                    if let image = nodes[slot].image {
                        evicted[nodes[slot].key] = WeakImage(image, expiry: nodes[slot].expiry)
                    }
                }
            } else {
                evicted.removeAll()
            }
            let change = Change(cost: -totalCost, count: -index.count)
            index.removeAll()
            nodes.removeAll()
            free.removeAll()
            newest = -1
            oldest = -1
            totalCost = 0
            return change
        }

        /// Every entry's key with its last-use stamp.
        func entriesByRecency() -> [(stamp: UInt64, key: String)] {
            var entries: [(stamp: UInt64, key: String)] = []
            entries.reserveCapacity(index.count)
            var slot = newest
            while slot >= 0 {
                entries.append((nodes[slot].stamp, nodes[slot].key.string))
                slot = nodes[slot].older
            }
            return entries
        }
    }
}
