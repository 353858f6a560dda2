import Foundation
import Testing
import WebImage
import WebImageTestSupport

/// A still image of `width`×1 pixels: cost `width * 4` bytes.
func costImage(_ width: Int) -> DecodedImage {
    DecodedImage(
        bitmap: GeneratedImages.solid(width: width, height: 1, color: .init(r: 1, g: 2, b: 3, a: 255)),
        format: .png
    )
}

@Suite("MemoryCache")
struct MemoryCacheTests {
    @Test("Least recently used goes first, down to the lower watermark")
    func lruAndWatermark() {
        // 10 images of 400 bytes fit in 4000; the 11th passes the limit and purges to 2400.
        let cache = MemoryCache(limits: .init(costLimit: 4000, costAfterPurge: 2400))
        for index in 0..<10 { cache.setImage(costImage(100), forKey: "k\(index)") }
        #expect(cache.totalCost == 4000)
        #expect(cache.count == 10)
        // Touch k0 and k1 so they are the most recently used.
        #expect(cache.image(forKey: "k0") != nil)
        #expect(cache.image(forKey: "k1") != nil)
        cache.setImage(costImage(100), forKey: "k10")
        #expect(cache.totalCost == 2400)
        #expect(cache.keysByRecency == ["k10", "k1", "k0", "k9", "k8", "k7"])
        #expect(!cache.contains("k2"))
    }

    @Test("maxIdleAge: an image unused for longer misses and is freed; one in use stays; off by default")
    func idleAge() async throws {
        // The image dropped idles 400 ms at least; the ones kept are looked up well inside a minute.
        let short = MemoryCache(limits: .init(costLimit: 1 << 20, maxIdleAge: .milliseconds(200)))
        let long = MemoryCache(limits: .init(costLimit: 1 << 20, maxIdleAge: .seconds(60)))
        let unlimited = MemoryCache(limits: .init(costLimit: 1 << 20))
        #expect(unlimited.limits.maxIdleAge == nil)
        for cache in [short, long, unlimited] {
            for key in ["idle", "stale", "swept"] { cache.setImage(costImage(10), forKey: key) }
        }
        try await Task.sleep(for: .milliseconds(400))
        #expect(short.image(forKey: "idle") == nil, "idle past its age: a miss")
        #expect(!short.contains("idle"), "and removed")
        #expect(short.count == 2 && short.totalCost == 80)
        short.setImage(costImage(10), forKey: "fresh")  // a store frees its shard's idle entries
        short.removeIdleImages()
        #expect(short.count == 1 && short.totalCost == 40 && short.keysByRecency == ["fresh"])
        for key in ["idle", "stale", "swept"] {
            #expect(long.image(forKey: key) != nil, "\(key) within its age")
            #expect(unlimited.image(forKey: key) != nil, "\(key) without an age limit")
        }
        long.removeIdleImages()
        #expect(long.count == 3)
        // Lowering the limit applies to what is already stored.
        try await Task.sleep(for: .milliseconds(50))
        long.limits.maxIdleAge = .milliseconds(1)
        try await Task.sleep(for: .milliseconds(50))
        long.removeIdleImages()
        #expect(long.count == 0 && long.totalCost == 0)
    }

    @Test("An image over the whole cost limit is not kept, not even weakly, and drops the key's older image")
    func oversizedImage() {
        let cache = MemoryCache(limits: .init(costLimit: 1000))
        let small = costImage(10)
        cache.setImage(small, forKey: "k")
        let large = costImage(300)  // 1,200 bytes
        cache.setImage(large, forKey: "k")
        #expect(cache.image(forKey: "k") == nil, "held here, yet not findable")
        #expect(cache.totalCost == 0 && cache.count == 0)
        withExtendedLifetime((small, large)) {}
    }

    @Test("Touching the newest entry again, or storing over it, keeps one entry per key in order")
    func newestTouchedAgain() {
        let cache = MemoryCache(limits: .init(costLimit: 1 << 20))
        cache.setImage(costImage(1), forKey: "a")
        cache.setImage(costImage(1), forKey: "b")
        #expect(cache.image(forKey: "b") != nil)
        #expect(cache.image(forKey: "b") != nil)
        cache.setImage(costImage(2), forKey: "b")
        #expect(cache.keysByRecency == ["b", "a"])
        #expect(cache.image(forKey: "a") != nil)
        #expect(cache.keysByRecency == ["a", "b"])
        #expect(cache.totalCost == 4 + 8)
    }

    @Test("Recency is kept across shards: many keys evict strictly oldest first")
    func recencyAcrossShards() {
        // 100 keys spread over every shard; touching the even ones makes the odd ones oldest.
        let cache = MemoryCache(
            limits: .init(costLimit: 100 * 4, costAfterPurge: 50 * 4),
            keepsEvictedImagesInUse: false
        )
        for index in 0..<100 { cache.setImage(costImage(1), forKey: "k\(index)") }
        for index in stride(from: 0, to: 100, by: 2) { #expect(cache.image(forKey: "k\(index)") != nil) }
        cache.setImage(costImage(1), forKey: "new")  // over the limit: purge to 50 entries
        #expect(cache.count == 50)
        let kept = Set(cache.keysByRecency)
        #expect(kept.contains("new"))
        #expect(kept == Set(["new"] + stride(from: 2, to: 100, by: 2).map { "k\($0)" }))
    }

    @Test("The count limit keeps the newest entries")
    func countLimit() {
        let cache = MemoryCache(limits: .init(costLimit: 1 << 30, countLimit: 3), keepsEvictedImagesInUse: false)
        for index in 0..<5 { cache.setImage(costImage(1), forKey: "k\(index)") }
        #expect(cache.keysByRecency == ["k4", "k3", "k2"])
        #expect(cache.image(forKey: "k0") == nil)
        // Replacing a key keeps one entry and updates the cost.
        cache.setImage(costImage(10), forKey: "k3")
        #expect(cache.count == 3)
        #expect(cache.totalCost == 4 + 4 + 40)
        cache.limits = .init(costLimit: 1 << 30, countLimit: 1)
        #expect(cache.keysByRecency == ["k3"])
    }

    @Test("An evicted image still held elsewhere is found again; a released one is gone")
    func weakMap() {
        let cache = MemoryCache(limits: .init(costLimit: 800, costAfterPurge: 400))
        var held: DecodedImage? = costImage(100)
        cache.setImage(held!, forKey: "held")
        cache.setImage(costImage(100), forKey: "dropped")
        cache.setImage(costImage(100), forKey: "newest")  // over 800: purge to 400, both evicted
        #expect(cache.keysByRecency == ["newest"])
        let revived = cache.image(forKey: "held")
        #expect(revived?.isSameInstance(as: held!) == true)
        #expect(cache.image(forKey: "dropped") == nil)
        #expect(cache.keysByRecency.first == "held")
        // Memory pressure drops what nobody holds, keeps what is held findable.
        cache.handleMemoryPressure()
        #expect(cache.count == 0)
        #expect(cache.image(forKey: "held") != nil)
        #expect(cache.image(forKey: "newest") == nil)
        cache.removeAll()
        #expect(cache.image(forKey: "held") == nil)
        held = nil
    }

    @Test("AFAutoPurgingImageCache's calls: identifiers, requests with an extra identifier")
    func autoPurgingCalls() {
        let cache = MemoryCache()
        let url = URL(string: "https://example.com/a.png")!
        cache.add(costImage(2), withIdentifier: "plain")
        cache.add(costImage(3), for: url, withAdditionalIdentifier: "circle")
        cache.add(costImage(4), for: url)
        #expect(cache.image(withIdentifier: "plain")?.width == 2)
        #expect(cache.image(for: url, withAdditionalIdentifier: "circle")?.width == 3)
        #expect(cache.image(for: url)?.width == 4)
        #expect(cache.removeImage(for: url, withAdditionalIdentifier: "circle"))
        #expect(!cache.removeImage(for: url, withAdditionalIdentifier: "circle"))
        #expect(cache.removeImage(withIdentifier: "plain"))
        #expect(cache.removeAllImages())
        #expect(!cache.removeAllImages())
    }

    @Test("Concurrent set, get and remove from many tasks keep the books straight")
    func stressConcurrentUse() async {
        let cache = MemoryCache(limits: .init(costLimit: 40 * 64, costAfterPurge: 20 * 64))
        let images = (0..<64).map { _ in costImage(10) }
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    for step in 0..<5000 {
                        let key = "k\((worker * 7 + step) % 64)"
                        switch step % 3 {
                        case 0: cache.setImage(images[(worker + step) % 64], forKey: key)
                        case 1: _ = cache.image(forKey: key)
                        default: cache.removeImage(forKey: key)
                        }
                    }
                }
            }
        }
        #expect(cache.totalCost <= 40 * 64)
        #expect(cache.totalCost == cache.count * 40)
        #expect(cache.keysByRecency.count == cache.count)
    }
}
