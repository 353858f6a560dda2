import Foundation
import Testing
import WebImage
import WebImageCoders
import WebImageOrigin
import WebImageTestSupport

@Suite("Colour policy through ImageManager: its own cache key, made from the stored original", .timeLimit(.minutes(1)))
struct ColorPolicyLoadTests {
    static let colors: [RGBA] = [RGBA(r: 200, g: 100, b: 50), RGBA(r: 40, g: 160, b: 90), RGBA(r: 90, g: 80, b: 200)]

    /// A Display P3-tagged JPEG of three solid blocks.
    static func p3JPEG() throws -> Data {
        var image = DecodedImage(
            bitmap: GeneratedImages.blocks(width: 48, height: 16, colors: colors, blockSize: 16),
            format: .jpeg
        )
        image.colorProfile = .displayP3
        return try JPEGCoder().encode(image, as: .jpeg, options: .init(quality: 1))
    }

    @Test("keep and ignore load their own images from the original on disk; the default converts")
    func policiesShareTheOriginal() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        let jpeg = try Self.p3JPEG()
        origin.setRoute("/p3.jpg", .data(jpeg, contentType: "image/jpeg", cacheControl: "max-age=3600"))
        let url = origin.url("/p3.jpg")

        let converted = try #require(try await fixture.manager.loadImage(with: url).image)
        await fixture.settle()
        var keep = ImageContext()
        keep.colorPolicy = .keep
        var ignore = ImageContext()
        ignore.colorPolicy = .ignore
        let kept = try await fixture.manager.loadImage(with: url, context: keep)
        let ignored = try await fixture.manager.loadImage(with: url, context: ignore)
        #expect(kept.cacheType == .disk && ignored.cacheType == .disk, "made from the original's disk entry")
        #expect(origin.requestCount(for: "/p3.jpg") == 1)

        let keptImage = try #require(kept.image)
        let ignoredImage = try #require(ignored.image)
        #expect(converted.colorProfile == nil && ignoredImage.colorProfile == nil)
        #expect(keptImage.colorProfile?.colorSpace == .rgb && keptImage.colorProfile?.isSRGB == false)
        #expect(keptImage.bitmap.pixels == ignoredImage.bitmap.pixels, "keep and ignore leave the numbers")
        #expect(converted.bitmap[8, 8] != ignoredImage.bitmap[8, 8], "the default converts P3 to sRGB")

        // Three keys, three memory entries: each policy's image comes back from memory.
        let keys = [nil, keep, ignore].map { fixture.manager.cacheKey(for: url, context: $0) }
        #expect(Set(keys).count == 3)
        #expect(keys[1].contains("|color=keep") && keys[2].contains("|color=ignore"))
        #expect(ImageCacheKey(rawValue: keys[1])?.colorPolicy == .keep)
        #expect(ImageCacheKey(rawValue: keys[1])?.rawValue == keys[1])
        let again = try await fixture.manager.loadImage(with: url, context: keep)
        #expect(again.cacheType == .memory && again.image?.colorProfile == keptImage.colorProfile)
        #expect(try await fixture.manager.loadImage(with: url).image?.colorProfile == nil)
        await origin.stop()
    }
}
