import Foundation
import Testing
import WebImageCoders
import WebImageTestSupport

/// `AnimatedImage` against the whole decode: the same frames, durations and loop count, one
/// frame at a time.
@Suite("AnimatedImage: frames on demand")
struct AnimatedImageTests {
    /// The corpus's animations this type decodes (GIF, APNG, animated WebP, AVIF sequences) that
    /// decode whole (the AVIF rows' manifest checks sniffing only; libavif decodes them).
    static let animations: [Corpus.Entry] = Corpus.entriesOrNote.filter { entry in
        (entry.expected == "decode-ok" || (entry.format == "avif" && entry.expected == "sniff"))
            && (entry.format == "gif" || entry.traits.contains("animated"))
            && ["gif", "webp", "apng", "avif"].contains(entry.format)
    }

    /// Frame `index` of `animation` matches frame `index` of `whole`: pixels, size, duration.
    static func expectSame(
        _ animation: AnimatedImage,
        _ whole: DecodedImage,
        at index: Int,
        _ entry: Corpus.Entry
    ) throws {
        let frame = try animation.frame(at: index)
        let expected = whole.frames[index]
        #expect(frame.bitmap.width == expected.bitmap.width && frame.bitmap.height == expected.bitmap.height)
        #expect(frame.bitmap.pixels == expected.bitmap.pixels, "\(entry) frame \(index): pixels differ")
        #expect(frame.duration == expected.duration, "\(entry) frame \(index): duration")
    }

    @Test(
        "Every corpus GIF, APNG, animated WebP and AVIF sequence: the facts before any pixel, each frame as the whole decode has it, in order and out of order",
        arguments: animations
    )
    func corpusFramesMatchWholeDecode(entry: Corpus.Entry) throws {
        let data = try Data(contentsOf: entry.url)
        let whole = try ImageCodersManager.shared.decode(data)
        let animation = try AnimatedImage(data: data)
        #expect(animation.frameCount == whole.frames.count)
        #expect(animation.frameCount == entry.frames)
        #expect(animation.loopCount == whole.loopCount)
        #expect(animation.info.canvasSize == whole.sourceSize)
        #expect(animation.info.durations == whole.frames.map(\.duration))
        #expect(animation.info.mayHaveAlpha || !whole.hasAlpha, "\(entry): alpha not announced")
        for index in 0..<animation.frameCount { try Self.expectSame(animation, whole, at: index, entry) }
        // Backwards and shuffled (a fixed seed): each asks the decoder to go back to the start.
        var random = SplitMix64(seed: UInt64(entry.file.utf8.count))
        var order = Array((0..<animation.frameCount).reversed())
        order.shuffle(using: &random)
        for index in order.prefix(12) { try Self.expectSame(animation, whole, at: index, entry) }
    }

    @Test("Frames on demand: the first frame and the animation; encoded, every frame, streamed or whole by the format")
    func framesOnDemandEncode() throws {
        let data = GIFBuilder.checkerAnimation(width: 48, height: 32, frames: 5)
        var options = ImageDecodingOptions()
        options.framesOnDemand = true
        let poster = try ImageCodersManager.shared.decode(data, options: options)
        let whole = try ImageCodersManager.shared.decode(data)
        #expect(poster.frames.count == 1 && poster.animation?.frameCount == 5)
        #expect(poster.bitmap == whole.frames[0].bitmap)
        for format in [ImageFormat.webp, .gif, .png, .jxl] {
            let written = try ImageCodersManager.shared.encode(poster, as: format)
            #expect(written == (try ImageCodersManager.shared.encode(whole, as: format)), "\(format)")
            #expect(try ImageCodersManager.shared.decode(written).frames.count == 5, "\(format)")
        }
        // Frames set by hand are the image: the animation goes.
        var replaced = poster
        replaced.frames = whole.frames
        #expect(replaced.animation == nil && replaced.frames.count == 5)
    }

    @Test("Thumbnail options shrink every frame as the whole decode does")
    func thumbnailFrames() throws {
        let data = GIFBuilder.checkerAnimation(width: 96, height: 64, frames: 6)
        let options = ImageDecodingOptions(thumbnailPixelSize: PixelSize(width: 24, height: 24))
        let whole = try ImageCodersManager.shared.decode(data, options: options)
        let animation = try AnimatedImage(data: data, options: options)
        #expect(animation.frameSize == PixelSize(width: 24, height: 16))
        for index in [5, 0, 3, 4] {
            let frame = try animation.frame(at: index)
            #expect(frame.bitmap == whole.frames[index].bitmap)
        }
    }

    @Test("An APNG thumbnail is reduced a frame at a time: every frame as the frame source gives it")
    func apngThumbnail() throws {
        let gif = GIFBuilder.checkerAnimation(width: 96, height: 64, frames: 6)
        let full = try ImageCodersManager.shared.decode(gif)
        let apng = try ImageCodersManager.shared.encode(full, as: .png, options: ImageEncodingOptions())
        #expect(AnimatedImage.canDecode(apng))
        let options = ImageDecodingOptions(thumbnailPixelSize: PixelSize(width: 24, height: 24))
        let whole = try ImageCodersManager.shared.decode(apng, options: options)
        #expect(whole.frames.count == 6 && whole.width == 24 && whole.height == 16)
        #expect(whole.format == .png && whole.sourceSize == PixelSize(width: 96, height: 64))
        let animation = try AnimatedImage(data: apng, options: options)
        #expect(animation.info.durations == full.frames.map(\.duration))
        for index in [5, 0, 3, 4] {
            #expect(try animation.frame(at: index).bitmap == whole.frames[index].bitmap, "frame \(index)")
        }
        // At full size the frames are the GIF's own, composed again from the APNG's rectangles.
        let fullSize = try AnimatedImage(data: apng)
        for index in 0..<6 { #expect(try fullSize.frame(at: index).bitmap.pixels == full.frames[index].bitmap.pixels) }
    }

    @Test("Frame 37 of a 48-frame GIF before frame 36; an index past the end names the count")
    func randomAccessAndBadIndex() throws {
        let data = GIFBuilder.checkerAnimation(width: 40, height: 40, frames: 48)
        let whole = try ImageCodersManager.shared.decode(data)
        let animation = try AnimatedImage(data: data)
        #expect(try animation.frame(at: 37).bitmap == whole.frames[37].bitmap)
        #expect(try animation.frame(at: 36).bitmap == whole.frames[36].bitmap)
        #expect(try animation.posterFrame().bitmap == whole.frames[0].bitmap)
        #expect(throws: CoderError.corruptData(.gif, "frame 48 asked of an animation of 48")) {
            try animation.frame(at: 48)
        }
    }

    @Test("An AVIF sequence a frame at a time: jumps back and forward from key frames, as the whole decode has them")
    func avifSequence() throws {
        let gif = GIFBuilder.checkerAnimation(width: 48, height: 32, frames: 12)
        let source = try ImageCodersManager.shared.decode(gif)
        let avif = try ImageCodersManager.shared.encode(source, as: .avif, options: ImageEncodingOptions(quality: 0.9))
        #expect(AnimatedImage.canDecode(avif))
        let whole = try ImageCodersManager.shared.decode(avif)
        #expect(whole.frames.count == 12)
        let animation = try AnimatedImage(data: avif)
        #expect(animation.info.format == .avif && animation.frameCount == 12 && animation.loopCount == whole.loopCount)
        #expect(animation.info.durations == whole.frames.map(\.duration))
        for index in [9, 8, 11, 0, 5, 6, 1] {
            #expect(try animation.frame(at: index).bitmap == whole.frames[index].bitmap, "frame \(index)")
        }
        #expect(throws: CoderError.corruptData(.avif, "frame 12 asked of an animation of 12")) {
            try animation.frame(at: 12)
        }
        // A thumbnail of it is reduced a frame at a time: the same as the frame source's.
        let options = ImageDecodingOptions(thumbnailPixelSize: PixelSize(width: 24, height: 24))
        let reduced = try ImageCodersManager.shared.decode(avif, options: options)
        let small = try AnimatedImage(data: avif, options: options)
        #expect(reduced.frames.count == 12 && reduced.width == 24 && reduced.height == 16)
        for index in [3, 11, 0] { #expect(try small.frame(at: index).bitmap == reduced.frames[index].bitmap) }
        // A still AVIF is a one-frame animation (libavif may read a track the sniffer cannot see).
        let still = try ImageCodersManager.shared.encode(
            DecodedImage(bitmap: whole.frames[4].bitmap, format: .avif),
            as: .avif,
            options: ImageEncodingOptions(quality: 0.9)
        )
        let one = try AnimatedImage(data: still)
        #expect(one.frameCount == 1 && one.info.durations == [0])
        #expect(try one.frame(at: 0).bitmap == ImageCodersManager.shared.decode(still).bitmap)
        // Cut short: refused when the container is read, by cause.
        #expect(throws: CoderError.self) { try AnimatedImage(data: Data(avif.prefix(avif.count / 3))).frame(at: 11) }
    }

    @Test("The memory limit counts the frames held at once, not frames × canvas")
    func limitCountsOneFrame() throws {
        // 48 frames of 512×512 are 48 MiB whole: over a 16 MiB animation limit, which one
        // frame's 3 MiB (three canvases) fits.
        let data = GIFBuilder.checkerAnimation(width: 512, height: 512, frames: 48)
        let options = ImageDecodingOptions(maxAnimationBytes: 16 << 20)
        #expect(throws: CoderError.self) { try ImageCodersManager.shared.decode(data, options: options) }
        let animation = try AnimatedImage(data: data, options: options)
        #expect(animation.bytesPerFrame == 3 * 512 * 512 * 4)
        #expect(try animation.frame(at: 47).bitmap.width == 512)
        let tight = ImageDecodingOptions(maxAnimationBytes: 2 << 20)
        #expect(throws: CoderError.self) { try AnimatedImage(data: data, options: tight) }
    }

    @Test(
        "A thumbnail decode of every corpus animation reduces each frame as it is composed: the full decode's frames, resized",
        arguments: animations
    )
    func reducedWholeDecode(entry: Corpus.Entry) throws {
        let data = try Data(contentsOf: entry.url)
        let full = try ImageCodersManager.shared.decode(data)
        let options = ImageDecodingOptions(thumbnailPixelSize: PixelSize(width: 40, height: 40))
        let reduced = try ImageCodersManager.shared.decode(data, options: options)
        let target = options.targetSize(forSource: full.sourceSize)
        #expect(reduced.frames.count == full.frames.count)
        #expect(reduced.loopCount == full.loopCount && reduced.sourceFrameCount == full.sourceFrameCount)
        #expect(reduced.hasAlpha == full.hasAlpha, "\(entry): alpha flag")
        for (index, frame) in reduced.frames.enumerated() {
            let expected = full.frames[index].bitmap.resized(to: target)
            #expect(frame.bitmap.pixels == expected.pixels, "\(entry) frame \(index)")
            #expect(frame.duration == full.frames[index].duration)
        }
    }

    @Test("A thumbnail of an animation too large to hold whole decodes: the limit counts the reduced frames")
    func thumbnailUnderTheLimit() throws {
        let data = GIFBuilder.checkerAnimation(width: 512, height: 512, frames: 48)
        var options = ImageDecodingOptions(maxAnimationBytes: 16 << 20)
        #expect(throws: CoderError.self) { try ImageCodersManager.shared.decode(data, options: options) }
        options.thumbnailPixelSize = PixelSize(width: 64, height: 64)
        let image = try ImageCodersManager.shared.decode(data, options: options)
        #expect(image.frames.count == 48 && image.width == 64 && image.loopCount == 0)
        // What a memory budget reserves for it: the reduced frames and one frame's canvases.
        let header = try #require(ImageHeader(data))
        #expect(header.decodedByteCount(with: options) == 48 * 64 * 64 * 4 + 3 * 512 * 512 * 4)
        options.maxAnimationBytes = 2 << 20  // three 1 MiB canvases do not fit
        #expect(header.decodedByteCount(with: options) == 0)
        #expect(throws: CoderError.self) { try ImageCodersManager.shared.decode(data, options: options) }
        // The first frame's delay is 10 cs, the others' 2 + n % 8 cs.
        let delays: [Double] = (0..<48).map { (number: Int) -> Double in
            number == 0 ? 0.1 : Double((2 + number % 8) * 10) / 1000
        }
        #expect(image.frames.map(\.duration) == delays)
    }

    @Test(
        "A still GIF, or an animation whose one frame's canvases are over the limit, still decodes whole to a thumbnail"
    )
    func reductionLeavesTheRestToTheWholeDecode() throws {
        let box = PixelSize(width: 64, height: 64)
        // One frame of 600×600 (1.44 MB): three canvases (4.3 MB) are over a 2 MB limit, which a
        // still image does not count.
        let still = GIFBuilder.checkerAnimation(width: 600, height: 600, frames: 1)
        let stillImage = try ImageCodersManager.shared.decode(
            still,
            options: ImageDecodingOptions(thumbnailPixelSize: box, maxAnimationBytes: 2_000_000)
        )
        #expect(stillImage.frames.count == 1 && stillImage.width == 64)
        // Two frames (2.9 MB whole) under a 3.5 MB limit: the whole decode's count admits them.
        let pair = GIFBuilder.checkerAnimation(width: 600, height: 600, frames: 2)
        let options = ImageDecodingOptions(thumbnailPixelSize: box, maxAnimationBytes: 3_500_000)
        let pairImage = try ImageCodersManager.shared.decode(pair, options: options)
        #expect(pairImage.frames.count == 2 && pairImage.width == 64)
        #expect(try #require(ImageHeader(pair)).decodedByteCount(with: options) == 2 * 600 * 600 * 4)
    }

    @Test("Data that is not an animation this type reads is refused by name")
    func refusals() throws {
        #expect(throws: CoderError.emptyData) { try AnimatedImage(data: Data()) }
        let png = BlankPNG.make(width: 4, height: 4)
        #expect(throws: CoderError.unsupportedFormat(.png)) { try AnimatedImage(data: png) }
        #expect(!AnimatedImage.canDecode(png))
        let gif = GIFBuilder.checkerAnimation(width: 8, height: 8, frames: 2)
        #expect(AnimatedImage.canDecode(gif))
        // Without its trailer, every frame is still whole: both decodes read them all.
        let noTrailer = Data(gif.dropLast())
        let whole = try ImageCodersManager.shared.decode(noTrailer)
        #expect(try AnimatedImage(data: noTrailer).frame(at: 1).bitmap == whole.frames[1].bitmap)
        // Cut inside the last frame's pixels: refused when the headers are read, by cause.
        #expect {
            try AnimatedImage(data: Data(gif.dropLast(6)))
        } throws: { error in
            guard case CoderError.truncatedData(.gif, _) = error else { return false }
            return true
        }
    }

    @Test("Frames asked from several threads at once each come out whole (one decoder, behind the lock)")
    func concurrentFrames() async throws {
        let data = GIFBuilder.checkerAnimation(width: 40, height: 40, frames: 16)
        let whole = try ImageCodersManager.shared.decode(data)
        let animation = try AnimatedImage(data: data)
        let mismatches = await withTaskGroup(of: Int.self) { group in
            for worker in 0..<4 {
                group.addTask {
                    var wrong = 0
                    for step in 0..<16 {
                        let index = (worker * 5 + step * 7) % 16
                        if (try? animation.frame(at: index).bitmap) != whole.frames[index].bitmap { wrong += 1 }
                    }
                    return wrong
                }
            }
            return await group.reduce(0, +)
        }
        #expect(mismatches == 0)
    }

    @Test("A cancelled decode stops between frames with limitExceeded")
    func cancellation() throws {
        let data = GIFBuilder.checkerAnimation(width: 64, height: 64, frames: 20)
        let cancellation = CodingCancellation()
        var options = ImageDecodingOptions()
        options.cancellation = cancellation
        let animation = try AnimatedImage(data: data, options: options)
        _ = try animation.frame(at: 3)
        cancellation.cancel()
        #expect(throws: CoderError.self) { try animation.frame(at: 19) }
    }
}
