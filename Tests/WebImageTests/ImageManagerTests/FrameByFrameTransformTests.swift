import Foundation
import Testing
import WebImage
import WebImageOrigin
import WebImageTestSupport

/// The manager transforms an animation a frame at a time when its transformer works on each
/// frame alone: the result is the whole decode's, transformed, while only one source frame's
/// canvases are held.
@Suite("Manager: animations transformed a frame at a time", .timeLimit(.minutes(2)))
struct FrameByFrameTransformTests {
    static let resize = ResizeTransformer(size: PixelSize(width: 40, height: 30), mode: .fill)

    /// `data` decoded whole and transformed by `transformer`: what the frame-by-frame path must give.
    static func wholeThenTransformed(_ data: Data, _ transformer: any ImageTransformer) throws -> DecodedImage {
        let whole = try ImageCodersManager.shared.decode(data, options: ImageDecodingOptions())
        return try #require(transformer.transform(whole, forKey: "reference"))
    }

    static func expectSameFrames(_ image: DecodedImage, _ reference: DecodedImage, _ label: String) {
        #expect(image.frames.count == reference.frames.count, "\(label): frame count")
        #expect(image.loopCount == reference.loopCount, "\(label): loop count")
        for (index, (frame, expected)) in zip(image.frames, reference.frames).enumerated() {
            #expect(frame.bitmap.pixels == expected.bitmap.pixels, "\(label): frame \(index)'s pixels")
            #expect(frame.bitmap.width == expected.bitmap.width && frame.bitmap.height == expected.bitmap.height)
            #expect(abs(frame.duration - expected.duration) < 1e-9, "\(label): frame \(index)'s duration")
        }
    }

    @Test("A GIF and an animated WebP resized frame by frame equal the whole decode resized, frame for frame")
    func sameAsWhole() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        let gif = GIFBuilder.checkerAnimation(width: 96, height: 64, frames: 9)
        let webp = try GeneratedImages.movingSquareAnimation(width: 96, height: 64, frames: 7, format: .webp)
        // Fresh for an hour: the second load below is a disk hit, not a revalidation.
        origin.setRoute("/a.gif", .data(gif, contentType: "image/gif", cacheControl: "max-age=3600"))
        origin.setRoute("/a.webp", .data(webp, contentType: "image/webp", cacheControl: "max-age=3600"))
        var context = ImageContext()
        context.transformer = PipelineTransformer([Self.resize, .roundCorners(6)])
        #expect(context.transformer?.transformsFramesIndependently == true)
        for (path, data) in [("/a.gif", gif), ("/a.webp", webp)] {
            let result = try await fixture.manager.loadImage(
                with: origin.url(path),
                options: .transformAnimatedImage,
                context: context
            )
            let image = try #require(result.image)
            Self.expectSameFrames(image, try Self.wholeThenTransformed(data, context.transformer!), path)
            #expect(image.frames.allSatisfy { $0.bitmap.width == 40 && $0.bitmap.height == 30 })
        }
        // Stored as the transformed animation's own bytes: a disk hit has the small frames.
        await fixture.settle()
        fixture.cache.clearMemory()
        let fromDisk = try await fixture.manager.loadImage(
            with: origin.url("/a.gif"),
            options: .transformAnimatedImage,
            context: context
        )
        #expect(fromDisk.cacheType == .disk)
        #expect(fromDisk.image?.frames.count == 9 && fromDisk.image?.width == 40)
        #expect(origin.requestCount(for: "/a.gif") == 1)
        await origin.stop()
    }

    @Test(
        "A decoding budget too small for the whole animation holds one frame: the resize succeeds, the whole decode is refused"
    )
    func withinOneFrameBudget() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        // 256² × 24 frames: 6 MiB decoded whole; one frame's canvases 768 KiB.
        let gif = try GeneratedImages.movingSquareAnimation(width: 256, height: 256, frames: 24, format: .gif)
        for path in ["/big.gif", "/big2.gif"] { origin.setRoute(path, .data(gif, contentType: "image/gif")) }
        var context = ImageContext()
        context.decodingMemoryBudget = DecodingMemoryBudget(limit: 2 << 20)
        // The control: no transformer, the whole animation is decoded, and refused.
        await #expect(throws: WebImageError.self) {
            _ = try await fixture.manager.loadImage(with: origin.url("/big.gif"), context: context)
        }
        context.transformer = ResizeTransformer(size: PixelSize(width: 64, height: 64))
        let result = try await fixture.manager.loadImage(
            with: origin.url("/big2.gif"),
            options: .transformAnimatedImage,
            context: context
        )
        let image = try #require(result.image)
        #expect(image.frames.count == 24 && image.width == 64 && image.height == 64)
        #expect(image.loopCount == 3)
        let expected: [Double] = (0..<24).map { (index: Int) -> Double in 0.04 + 0.01 * Double(index % 4) }
        let durations: [Double] = image.frames.map(\.duration)
        #expect(zip(durations, expected).allSatisfy { abs($0 - $1) < 1e-6 }, "\(durations)")
        await origin.stop()
    }

    /// A transformer that sees the whole animation: it keeps the first frame only.
    struct FirstFrameOnly: ImageTransformer {
        let calls = Locked<[Int]>([])
        var transformerKey: String { "FirstFrameOnly" }
        func transform(_ image: DecodedImage, forKey key: String) -> DecodedImage? {
            calls.withLock { $0.append(image.frames.count) }
            var first = image
            first.frames = [image.frames[0]]
            return first
        }
    }

    @Test("A transformer that needs the whole animation gets it whole, once")
    func wholeForOtherTransformers() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        origin.setRoute(
            "/a.gif",
            .data(GIFBuilder.checkerAnimation(width: 32, height: 32, frames: 5), contentType: "image/gif")
        )
        let transformer = FirstFrameOnly()
        #expect(!transformer.transformsFramesIndependently)
        #expect(!PipelineTransformer([Self.resize, transformer]).transformsFramesIndependently)
        var context = ImageContext()
        context.transformer = transformer
        let result = try await fixture.manager.loadImage(
            with: origin.url("/a.gif"),
            options: .transformAnimatedImage,
            context: context
        )
        #expect(result.image?.frames.count == 1)
        #expect(transformer.calls.value == [5])
        await origin.stop()
    }

    @Test(
        "Bytes that are no image fail the frame-by-frame load with badImageData naming the URL; a still image takes the same path whole"
    )
    func badBytesAndStills() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        origin.setRoute("/broken.gif", .data(Data("GIF89a not really".utf8), contentType: "image/gif"))
        origin.setRoute("/red.png", .data(ManagerImages.redPNG, contentType: "image/png"))
        var context = ImageContext()
        context.transformer = Self.resize
        let error = await #expect(throws: WebImageError.self) {
            _ = try await fixture.manager.loadImage(
                with: origin.url("/broken.gif"),
                options: .transformAnimatedImage,
                context: context
            )
        }
        #expect(error?.code == .badImageData)
        #expect(error?.message.contains("/broken.gif") == true, "\(error?.message ?? "")")
        #expect(error?.coderError != nil)
        let still = try await fixture.manager.loadImage(
            with: origin.url("/red.png"),
            options: .transformAnimatedImage,
            context: context
        )
        #expect(still.image?.width == 40 && still.image?.height == 30 && still.image?.frames.count == 1)
        await origin.stop()
    }

    /// Resizes, counting frames; holds frame 3 until `gate` opens (the test cancels meanwhile).
    struct GatedResize: BitmapTransformer {
        let frames = Locked(0)
        let gate = DispatchSemaphore(value: 0)
        var transformerKey: String { "GatedResize" }
        func transform(_ bitmap: Bitmap) -> Bitmap? {
            let count = frames.withLock { (value: inout Int) -> Int in
                value += 1
                return value
            }
            if count == 3 { gate.wait() }
            return ResizeTransformer(size: PixelSize(width: 16, height: 16)).transform(bitmap)
        }
    }

    @Test("A load cancelled in the middle of an animation stops between frames and gives its budget back")
    func cancelledBetweenFrames() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        let gif = try GeneratedImages.movingSquareAnimation(width: 128, height: 128, frames: 60, format: .gif)
        origin.setRoute("/long.gif", .data(gif, contentType: "image/gif"))
        let transformer = GatedResize()
        let budget = DecodingMemoryBudget(limit: 64 << 20)
        var context = ImageContext()
        context.transformer = transformer
        context.decodingMemoryBudget = budget
        let outcome = Locked<WebImageError.Code?>(nil)
        let operation = fixture.manager.loadImage(
            with: origin.url("/long.gif"),
            options: .transformAnimatedImage,
            context: context
        ) { _, _, error, _, finished, _ in
            if finished { outcome.withLock { $0 = error?.code } }
        }
        await DownloaderFixtures.wait { transformer.frames.value == 3 }
        #expect(budget.bytesInUse > 0, "one frame's canvases are reserved while it decodes")
        operation.cancel()
        await DownloaderFixtures.wait { outcome.value != nil }
        #expect(outcome.value == .cancelled)
        transformer.gate.signal()
        await DownloaderFixtures.wait { budget.bytesInUse == 0 }
        #expect(budget.bytesInUse == 0)
        #expect(transformer.frames.value == 3, "\(transformer.frames.value) frames transformed, 3 before the cancel")
        await origin.stop()
    }
}
