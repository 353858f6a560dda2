import Foundation
import Testing
import WebImageCoders
import WebImageTestSupport

@Suite("Thumbnails, scale-down and limits")
struct DecodingLimitsTests {
    let box = PixelSize(width: 100, height: 100)

    @Test(
        "Every format's thumbnail fits the box and keeps the aspect ratio",
        arguments: [ImageFormat.jpeg, .png, .gif, .webp]
    )
    func thumbnails(format: ImageFormat) throws {
        let image = DecodedImage(bitmap: GeneratedImages.gradient(width: 400, height: 300), format: format)
        let data = try ImageCodersManager.shared.encode(image, as: format)
        let thumbnail = try ImageCodersManager.shared.decode(data, options: .init(thumbnailPixelSize: box))
        #expect(thumbnail.width == 100 && thumbnail.height == 75)
        #expect(thumbnail.sourceSize == PixelSize(width: 400, height: 300))
    }

    @Test("A thumbnail box never upscales")
    func noUpscale() throws {
        let data = try PNGCoder().encode(
            DecodedImage(bitmap: GeneratedImages.gradient(width: 40, height: 20), format: .png),
            as: .png,
            options: .init()
        )
        let image = try PNGCoder().decode(data, options: .init(thumbnailPixelSize: box))
        #expect(image.width == 40 && image.height == 20)
    }

    @Test("Animated thumbnails scale every frame")
    func animatedThumbnail() throws {
        let animation = GeneratedImages.animation(
            width: 200,
            height: 100,
            colors: [RGBA(r: 1, g: 2, b: 3), RGBA(r: 200, g: 100, b: 0)],
            format: .gif
        )
        let data = try GIFCoder().encode(animation, as: .gif, options: .init())
        let image = try GIFCoder().decode(data, options: .init(thumbnailPixelSize: box))
        #expect(image.frames.count == 2)
        #expect(image.frames.allSatisfy { $0.bitmap.width == 100 && $0.bitmap.height == 50 })
    }

    @Test("The scale-down limit bounds the bytes of a frame")
    func scaleDownLimit() throws {
        let data = try JPEGCoder().encode(
            DecodedImage(bitmap: GeneratedImages.gradient(width: 800, height: 600), format: .jpeg),
            as: .jpeg,
            options: .init()
        )
        let limit = 200 * 150 * 4
        let image = try JPEGCoder().decode(data, options: .init(scaleDownLimitBytes: limit))
        #expect(image.bitmap.byteCount <= limit + 800 * 4)
        #expect(image.width == 200 && image.height == 150)
    }

    @Test("The pixel limit rejects oversized images from the header", arguments: [ImageFormat.jpeg, .png, .gif, .webp])
    func pixelLimit(format: ImageFormat) throws {
        let data = try ImageCodersManager.shared.encode(
            DecodedImage(bitmap: GeneratedImages.gradient(width: 300, height: 200), format: format),
            as: format
        )
        #expect {
            try ImageCodersManager.shared.decode(data, options: .init(maxPixelCount: 300 * 200 - 1))
        } throws: { ($0 as? CoderError)?.code == "limitExceeded" }
        #expect(try ImageCodersManager.shared.decode(data, options: .init(maxPixelCount: 300 * 200)).width == 300)
    }

    @Test("A PNG that declares 100,000 × 100,000 pixels is rejected before any allocation")
    func decompressionBomb() throws {
        var bytes = [UInt8](PNGBuilder(width: 1, height: 1, colorType: .gray).build { _, _ in [0] })
        // Rewrite IHDR's width/height to 100,000 and fix the CRC so only the limit can reject it.
        let size: [UInt8] = [0x00, 0x01, 0x86, 0xA0]
        bytes.replaceSubrange(16..<20, with: size)
        bytes.replaceSubrange(20..<24, with: size)
        let crc = Checksum.crc32(bytes[12..<29])
        bytes.replaceSubrange(
            29..<33,
            with: [UInt8(crc >> 24), UInt8(crc >> 16 & 0xFF), UInt8(crc >> 8 & 0xFF), UInt8(crc & 0xFF)]
        )
        #expect {
            try PNGCoder().decode(Data(bytes), options: .init())
        } throws: { ($0 as? CoderError)?.code == "limitExceeded" }
    }

    @Test("Frame-count and animation-memory limits")
    func animationLimits() throws {
        let animation = GeneratedImages.animation(
            width: 10,
            height: 10,
            colors: (0..<5).map { RGBA(r: UInt8($0 * 50), g: 9, b: 9) },
            format: .gif
        )
        for format in [ImageFormat.gif, .webp] {
            let data = try ImageCodersManager.shared.encode(animation, as: format)
            #expect(throws: CoderError.self) {
                try ImageCodersManager.shared.decode(data, options: .init(maxFrameCount: 4))
            }
            #expect(throws: CoderError.self) {
                try ImageCodersManager.shared.decode(data, options: .init(maxAnimationBytes: 10 * 10 * 4 * 4))
            }
            #expect(try ImageCodersManager.shared.decode(data, options: .init(maxFrameCount: 5)).frames.count == 5)
        }
    }

    @Test("A GIF whose declared frames exceed the animation limit fails before its canvas is allocated")
    func gifCanvasBomb() throws {
        // 20 one-pixel frames on a 2000×2000 canvas: 320 MB composed, in a few hundred bytes
        // (the same shape at 10000×10000 is 8 GB, refused by the default 1 GiB limit).
        let frames = (0..<20).map { GIFBuilder.Frame(x: $0, y: $0, width: 1, height: 1, indices: [1]) }
        let data = GIFBuilder(width: 2000, height: 2000, globalPalette: [(0, 0, 0), (255, 255, 255)])
            .build(frames: frames)
        #expect(data.count < 1000)
        #expect(ImageHeader(data)?.frameCount == 20)
        let limits = ImageDecodingOptions(maxAnimationBytes: 64 << 20)
        do {
            _ = try ImageCodersManager.shared.decode(data, options: limits)
            Issue.record("a 320 MB animation decoded under a 64 MiB limit")
        } catch {
            // Counted from the header (all 20), not found at the fifth 16 MB frame.
            guard case .limitExceeded(.gif, let detail) = error else { throw error }
            #expect(detail.hasPrefix("20 frames of 2000×2000"), "\(detail)")
        }
        // The first frame alone is within the limits.
        var first = limits
        first.firstFrameOnly = true
        #expect(try ImageCodersManager.shared.decode(data, options: first).sourceFrameCount == 20)
    }

    @Test("A decode over maxDecodeDuration fails with limitExceeded; without a limit it succeeds")
    func decodeTimeLimit() throws {
        // 512 × 512: PNG reads the clock every 256 KiB of rows, so this image is checked four times.
        let still = DecodedImage(bitmap: GeneratedImages.noise(width: 512, height: 512), format: .png)
        let animation = GeneratedImages.animation(
            width: 64,
            height: 64,
            colors: (0..<4).map { RGBA(r: UInt8($0 * 60), g: 9, b: 9) },
            format: .gif
        )
        let apng = PNGBuilder(width: 8, height: 8, colorType: .rgba).buildAnimated(
            frames: (0..<3).map { index in
                PNGBuilder.Frame(width: 8, height: 8) { _, _ in [UInt16(index * 80), 0, 0, 255] }
            },
            plays: 0
        )
        let inputs: [(String, Data)] = [
            ("jpeg", try JPEGCoder().encode(still, as: .jpeg, options: .init())),
            ("progressive jpeg", try JPEGCoder().encode(still, as: .jpeg, options: .init(progressive: true))),
            ("png", try PNGCoder().encode(still, as: .png, options: .init())),
            ("gif", try GIFCoder().encode(animation, as: .gif, options: .init())),
            ("animated webp", try WebPCoder().encode(animation, as: .webp, options: .init())),
            ("apng", apng),
        ]
        for (name, data) in inputs {
            var failure: CoderError?
            do {
                _ = try ImageCodersManager.shared.decode(data, options: .init(maxDecodeDuration: .nanoseconds(1)))
            } catch {
                failure = error
            }
            #expect(failure?.code == "limitExceeded", "\(name): \(String(describing: failure))")
            #expect(failure.map { "\($0)".contains("longer than") } == true, "\(name)")
            let image = try ImageCodersManager.shared.decode(data, options: .init(maxDecodeDuration: nil))
            #expect(image.width > 0, "\(name)")
        }
    }

    @Test("A JPEG with more than 1,000 scans is rejected (a scan bomb)")
    func jpegScanBomb() throws {
        let data = try JPEGCoder().encode(
            DecodedImage(bitmap: GeneratedImages.noise(width: 32, height: 32), format: .jpeg),
            as: .jpeg,
            options: .init(progressive: true)
        )
        let bytes = [UInt8](data)
        // The last scan runs from the last SOS marker to EOI; repeating it keeps the file valid
        // (libjpeg only warns about the pointless refinement) but multiplies the passes.
        let lastScan = try #require((0..<bytes.count - 1).last { bytes[$0] == 0xFF && bytes[$0 + 1] == 0xDA })
        let scan = bytes[lastScan..<(bytes.count - 2)]
        func repeated(_ count: Int) -> Data {
            Data(bytes[..<lastScan] + (0..<count).flatMap { _ in scan } + [0xFF, 0xD9])
        }
        #expect(try JPEGCoder().decode(repeated(20), options: .init()).width == 32)
        #expect {
            try JPEGCoder().decode(repeated(1_100), options: .init(maxDecodeDuration: nil))
        } throws: { error in
            (error as? CoderError)?.code == "limitExceeded" && "\(error)".contains("scans")
        }
    }

    @Test("Memory cost counts every frame")
    func cost() {
        let animation = GeneratedImages.animation(
            width: 10,
            height: 20,
            colors: [RGBA(r: 0, g: 0, b: 0), RGBA(r: 1, g: 1, b: 1), RGBA(r: 2, g: 2, b: 2)],
            format: .gif
        )
        #expect(animation.cost == 3 * 10 * 20 * 4)
    }

    @Test("A small file declaring 1×5,000,000 pixels thumbnails to 1×64")
    func extremeAspectRatioThumbnail() throws {
        let data = BlankPNG.make(width: 1, height: 5_000_000)
        #expect(data.count < 100_000)
        let options = ImageDecodingOptions(thumbnailPixelSize: PixelSize(width: 64, height: 64), maxDecodeDuration: nil)
        let image = try PNGCoder().decode(data, options: options)
        #expect(image.width == 1 && image.height == 64)
        #expect(image.sourceSize == PixelSize(width: 1, height: 5_000_000))
        #expect(image.bitmap[0, 63] == RGBA(r: 0, g: 0, b: 0))
    }

    @Test("PNG encodes past libpng's default 1,000,000-row limit, as it decodes")
    func tallPNGRoundTrip() throws {
        let tall = GeneratedImages.solid(width: 1, height: 1_100_000, color: RGBA(r: 9, g: 80, b: 200))
        let data = try PNGCoder().encode(DecodedImage(bitmap: tall, format: .png), as: .png, options: .init())
        let image = try PNGCoder().decode(data, options: .init())
        #expect(image.width == 1 && image.height == 1_100_000)
        #expect(image.bitmap[0, 1_099_999] == RGBA(r: 9, g: 80, b: 200))
    }

    @Test("Encoding an animation stops at its time limit", arguments: [ImageFormat.gif, .webp])
    func encodeTimeLimit(format: ImageFormat) throws {
        let animation = GeneratedImages.animation(
            width: 64,
            height: 64,
            colors: [RGBA(r: 1, g: 2, b: 3), RGBA(r: 200, g: 100, b: 0), RGBA(r: 0, g: 90, b: 200)],
            format: format
        )
        let unlimited = ImageEncodingOptions(maxEncodeDuration: nil)
        #expect(try ImageCodersManager.shared.encode(animation, as: format, options: unlimited).count > 0)
        let spent = ImageEncodingOptions(maxEncodeDuration: .nanoseconds(1))
        let error = #expect(throws: CoderError.self) {
            try ImageCodersManager.shared.encode(animation, as: format, options: spent)
        }
        #expect(error?.code == "limitExceeded")
        #expect(error.map { "\($0)" }?.contains("encoding took longer") == true)
    }
}
