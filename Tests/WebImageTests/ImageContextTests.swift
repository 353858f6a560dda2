import Foundation
import Testing
import WebImageCoders
import WebImageHTTP

@testable import WebImage

@Suite("ImageContext: defaults and copies")
struct ImageContextTests {
    @Test("A new context has the documented defaults")
    func defaults() {
        let context = ImageContext()
        #expect(context.thumbnailPixelSize == nil && context.priority == nil)
        #expect(context.scaleDownLimitBytes == 60 * 1024 * 1024)
        #expect(context.colorPolicy == .convertToSRGB && context.storeCacheType == .all)
        #expect(context.maxDecodeDuration == .seconds(10))
        #expect(context.requestModifier == nil && context.responseModifier == nil && context.decryptor == nil)
        #expect(context.coders == nil && context.decodeQueue == nil && context.transformer == nil)
        #expect(!context.changesItsDownload)
    }

    @Test("A copy is a value of its own: a change to one leaves the other as it was")
    func copiesAreIndependent() {
        let queue = ImageWorkQueue(width: 1, name: "context-test")
        var original = ImageContext(thumbnailPixelSize: PixelSize(width: 10, height: 20))
        original.storeCacheType = .disk
        original.decodeQueue = queue
        var copy = original
        copy.thumbnailPixelSize = nil
        copy.storeCacheType = .none
        copy.maxDecodeDuration = nil
        copy.decodeQueue = nil
        copy.retryStrategy = BackoffRetryStrategy()
        #expect(original.thumbnailPixelSize == PixelSize(width: 10, height: 20))
        #expect(original.storeCacheType == .disk && original.maxDecodeDuration == .seconds(10))
        #expect(original.decodeQueue === queue && original.retryStrategy == nil && !original.changesItsDownload)
        #expect(copy.thumbnailPixelSize == nil && copy.storeCacheType == .none && copy.maxDecodeDuration == nil)
        #expect(copy.decodeQueue == nil && copy.changesItsDownload)
        original.scaleDownLimitBytes = 5
        #expect(copy.scaleDownLimitBytes == 60 * 1024 * 1024 && original.scaleDownLimitBytes == 5)
    }

    @Test("Filling gives the queues and budget a context names none of, and keeps the ones it names")
    func filling() {
        let (own, managers) = (ImageWorkQueue(width: 1, name: "own"), ImageWorkQueue(width: 1, name: "manager's"))
        let budget = DecodingMemoryBudget(limit: 1 << 20)
        var context = ImageContext()
        context.decodeQueue = own
        context.storeCacheType = .memory
        let filled = context.filling(decodeQueue: managers, transformQueue: managers, decodingMemoryBudget: budget)
        #expect(filled.decodeQueue === own && filled.transformQueue === managers)
        #expect(filled.decodingMemoryBudget === budget && filled.storeCacheType == .memory)
        #expect(context.transformQueue == nil && context.decodingMemoryBudget == nil)
        let unchanged = context.filling(decodeQueue: managers, transformQueue: nil, decodingMemoryBudget: nil)
        #expect(
            unchanged.decodeQueue === own && unchanged.transformQueue == nil && unchanged.decodingMemoryBudget == nil
        )
    }

    @Test("Copies of one context changed on many tasks at once each keep their own settings (stress)")
    func copiesUnderStress() async {
        var shared = ImageContext()
        shared.scaleDownLimitBytes = 1
        let base = shared
        await withTaskGroup(of: Bool.self) { group in
            for index in 0..<32 {
                group.addTask {
                    var mine = base
                    for round in 0..<500 {
                        mine.scaleDownLimitBytes = index * 1000 + round
                        var other = mine
                        other.maxDecodeDuration = nil
                        other.scaleDownLimitBytes = -1
                        guard mine.scaleDownLimitBytes == index * 1000 + round, mine.maxDecodeDuration != nil else {
                            return false
                        }
                    }
                    return base.scaleDownLimitBytes == 1 && base.maxDecodeDuration == .seconds(10)
                }
            }
            for await intact in group { #expect(intact) }
        }
        #expect(shared.scaleDownLimitBytes == 1)
    }
}
