import Foundation
import Testing
import WebImage
import WebImageTestSupport

/// Run under `swift test --sanitize=thread --filter Stress` by scripts/test.sh.
@Suite("Stress: ImageCache under concurrent store, query and remove", .timeLimit(.minutes(2)))
struct CacheStressTests {
    @Test("Eight tasks storing, querying and removing overlapping keys keep every answer whole")
    func concurrentStoreQueryRemove() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let cache = CacheFixtures.cache(folder) { configuration in
            configuration.memoryLimits = .init(costLimit: 8 * CacheFixtures.pngImage.cost)
        }
        let mismatches = Locked(0)
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    for step in 0..<300 {
                        let key = "https://example.com/\((worker * 13 + step) % 24).png"
                        switch step % 4 {
                        case 0: try? await cache.store(CacheFixtures.pngImage, data: CacheFixtures.png, forKey: key)
                        case 1, 2:
                            let result = await cache.queryImage(forKey: key)
                            if let image = result.image, image.bitmap != CacheFixtures.pngImage.bitmap {
                                mismatches.withLock { $0 += 1 }
                            }
                            if let data = result.data, data != CacheFixtures.png { mismatches.withLock { $0 += 1 } }
                        default: cache.removeImage(forKey: key, fromDisk: step % 8 == 3)
                        }
                    }
                }
            }
        }
        #expect(mismatches.value == 0)
        #expect(cache.memoryCache.totalCost <= 8 * CacheFixtures.pngImage.cost)
        let result = await cache.deleteOldFiles()
        #expect(result.remainingCount <= 24)
    }
}
