import Foundation
import Testing
import WebImage
import WebImageOrigin
import WebImageTestSupport

/// `decodeFramesOnDemand`: the manager delivers an animation's first frame with the
/// `AnimatedImage` the others come from, the memory cache counts that frame and the bytes, and
/// images decoded one way never serve loads that ask for the other.
@Suite("Manager: animations with frames decoded on demand", .timeLimit(.minutes(2)))
struct FramesOnDemandTests {
    static func wholeDecode(_ data: Data) throws -> DecodedImage {
        try ImageCodersManager.shared.decode(data, options: ImageDecodingOptions())
    }

    @Test(
        "The first frame and the animation; frames on demand equal the whole decode's; the cache counts poster and bytes"
    )
    func posterAndFrames() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        let gif = try GeneratedImages.movingSquareAnimation(width: 128, height: 96, frames: 30, format: .gif)
        let webp = try GeneratedImages.movingSquareAnimation(width: 128, height: 96, frames: 12, format: .webp)
        origin.setRoute("/a.gif", .data(gif, contentType: "image/gif", cacheControl: "max-age=3600"))
        origin.setRoute("/a.webp", .data(webp, contentType: "image/webp", cacheControl: "max-age=3600"))
        for (path, data) in [("/a.gif", gif), ("/a.webp", webp)] {
            let whole = try Self.wholeDecode(data)
            let result = try await fixture.manager.loadImage(with: origin.url(path), options: .decodeFramesOnDemand)
            let image = try #require(result.image)
            let animation = try #require(image.animation, "\(path): no animation")
            #expect(image.frames.count == 1)
            #expect(image.bitmap.pixels == whole.frames[0].bitmap.pixels, "\(path): poster")
            #expect(animation.frameCount == whole.frames.count && animation.loopCount == whole.loopCount)
            #expect(abs(image.duration - whole.duration) < 1e-9)
            for index in [whole.frames.count - 1, 3, 2, 0] {
                let frame = try animation.frame(at: index)
                #expect(frame.bitmap.pixels == whole.frames[index].bitmap.pixels, "\(path): frame \(index)")
                #expect(abs(frame.duration - whole.frames[index].duration) < 1e-9)
            }
            // The memory cache charges the poster and the encoded bytes, not every frame.
            let key = fixture.manager.cacheKey(for: origin.url(path))
            let cached = try #require(fixture.cache.memoryCache.image(forKey: key))
            #expect(cached.isSameInstance(as: image))
            #expect(cached.cost == image.bitmap.byteCount + data.count)
            #expect(cached.cost < whole.cost / 4, "\(path): \(cached.cost) against \(whole.cost) whole")
            // A second load with the option is a memory hit on the same image, no request.
            let again = try await fixture.manager.loadImage(with: origin.url(path), options: .decodeFramesOnDemand)
            #expect(again.cacheType == .memory && again.image?.isSameInstance(as: image) == true)
        }
        #expect(origin.requestCount(for: "/a.gif") == 1 && origin.requestCount(for: "/a.webp") == 1)
        await origin.stop()
    }

    @Test("An image decoded one way serves no load that asks for the other: it decodes again from disk")
    func matchingOnHits() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        let gif = GIFBuilder.checkerAnimation(width: 48, height: 32, frames: 6)
        origin.setRoute("/a.gif", .data(gif, contentType: "image/gif", cacheControl: "max-age=3600"))
        let url = origin.url("/a.gif")
        let lazy = try await fixture.manager.loadImage(with: url, options: [.decodeFramesOnDemand, .waitStoreCache])
        #expect(lazy.image?.animation != nil)
        // A load without the option wants every frame: not the on-demand image in memory.
        let whole = try await fixture.manager.loadImage(with: url)
        #expect(whole.cacheType == .disk)
        #expect(whole.image?.frames.count == 6 && whole.image?.animation == nil)
        // The whole one replaced it in memory; it serves the first-frame loads, not the on-demand ones.
        let first = try await fixture.manager.loadImage(with: url, options: .decodeFirstFrameOnly)
        #expect(first.cacheType == .memory)
        let lazyAgain = try await fixture.manager.loadImage(with: url, options: .decodeFramesOnDemand)
        #expect(lazyAgain.cacheType == .disk && lazyAgain.image?.animation?.frameCount == 6)
        #expect(lazyAgain.image?.frames.count == 1)
        // The synchronous lookup matches the same way.
        let key = fixture.manager.cacheKey(for: url)
        #expect(fixture.cache.imageFromCache(forKey: key, options: .decodeFramesOnDemand)?.animation != nil)
        #expect(fixture.cache.imageFromCache(forKey: key)?.frames.count == 6)
        // One download: the rest came from disk.
        #expect(origin.requestCount(for: "/a.gif") == 1)
        await origin.stop()
    }

    @Test(
        "A decoding budget too small for the whole animation admits the on-demand load; a still image decodes as usual"
    )
    func budgetAndStills() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        // 256² × 24 frames: 6 MiB whole; the first frame's canvases 768 KiB.
        let gif = try GeneratedImages.movingSquareAnimation(width: 256, height: 256, frames: 24, format: .gif)
        // Two URLs: the refused load's URL is remembered as failed.
        for path in ["/big.gif", "/big2.gif"] { origin.setRoute(path, .data(gif, contentType: "image/gif")) }
        origin.setRoute("/still.png", .data(BlankPNG.make(width: 20, height: 10), contentType: "image/png"))
        var context = ImageContext()
        context.decodingMemoryBudget = DecodingMemoryBudget(limit: 2 << 20)
        await #expect(throws: WebImageError.self) {
            _ = try await fixture.manager.loadImage(
                with: origin.url("/big.gif"),
                options: .fromLoaderOnly,
                context: context
            )
        }
        let result = try await fixture.manager.loadImage(
            with: origin.url("/big2.gif"),
            options: [.decodeFramesOnDemand, .fromLoaderOnly],
            context: context
        )
        let animation = try #require(result.image?.animation)
        #expect(animation.frameCount == 24)
        let last = try animation.frame(at: 23)
        #expect(last.bitmap.pixels == (try Self.wholeDecode(gif)).frames[23].bitmap.pixels)
        let still = try await fixture.manager.loadImage(with: origin.url("/still.png"), options: .decodeFramesOnDemand)
        #expect(still.image?.animation == nil && still.image?.width == 20)
        await origin.stop()
    }

    @Test("With a transformer the option is ignored: every frame is transformed")
    func transformerWins() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        origin.setRoute(
            "/a.gif",
            .data(GIFBuilder.checkerAnimation(width: 48, height: 32, frames: 5), contentType: "image/gif")
        )
        var context = ImageContext()
        context.transformer = ResizeTransformer(size: PixelSize(width: 24, height: 16))
        let result = try await fixture.manager.loadImage(
            with: origin.url("/a.gif"),
            options: [.decodeFramesOnDemand, .transformAnimatedImage],
            context: context
        )
        #expect(result.image?.animation == nil)
        #expect(result.image?.frames.count == 5 && result.image?.width == 24)
        // The transformed animation in memory serves the same load again.
        let again = try await fixture.manager.loadImage(
            with: origin.url("/a.gif"),
            options: [.decodeFramesOnDemand, .transformAnimatedImage],
            context: context
        )
        #expect(again.cacheType == .memory)
        await origin.stop()
    }

    @Test("A player of the delivered animation plays the whole decode's frames within its budget; stop empties it")
    func playerFromLoad() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        let gif = GIFBuilder.checkerAnimation(width: 40, height: 40, frames: 8)
        origin.setRoute("/a.gif", .data(gif, contentType: "image/gif"))
        let result = try await fixture.manager.loadImage(with: origin.url("/a.gif"), options: .decodeFramesOnDemand)
        let animation = try #require(result.image?.animation)
        let whole = try Self.wholeDecode(gif)
        // A budget of two frames: the player decodes ahead and evicts behind.
        let player = AnimatedImagePlayer(animation: animation, maxBufferSize: 2 * 40 * 40 * 4)
        var shown: [Int] = []
        let deadline = ContinuousClock.now + .seconds(60)
        while shown.count < 8, ContinuousClock.now < deadline {
            if let frame = player.currentFrame, shown.last != player.currentFrameIndex {
                #expect(frame.bitmap.pixels == whole.frames[player.currentFrameIndex].bitmap.pixels)
                shown.append(player.currentFrameIndex)
            }
            #expect(player.bufferedByteCount <= player.maxBufferSize)
            if player.advance(by: 1) == nil { try await Task.sleep(for: .milliseconds(5)) }
        }
        #expect(shown == Array(0..<8))
        player.stop()
        #expect(player.bufferedByteCount == 0)
        await origin.stop()
    }
}
