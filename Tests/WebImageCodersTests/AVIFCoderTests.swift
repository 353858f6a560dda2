import CAVIF
import Foundation
import Testing
import WebImageTestEncoders
import WebImageTestSupport

@testable import WebImageCoders

@Suite("AVIF decoding and encoding")
struct AVIFCoderTests {
    static func encode(_ image: DecodedImage, _ options: ImageEncodingOptions = .init()) throws -> Data {
        try AVIFCoder().encode(image, as: .avif, options: options)
    }

    @Test("A still image round-trips close to the source; the data sniffs as AVIF and its header reads")
    func still() throws {
        let source = GeneratedImages.gradient(width: 96, height: 64)
        let data = try Self.encode(DecodedImage(bitmap: source, format: .avif), .init(quality: 0.9))
        #expect(ImageFormat(sniffing: data) == .avif)
        #expect(ImageHeader(data) == ImageHeader(format: .avif, size: PixelSize(width: 96, height: 64), frameCount: 1))
        let image = try ImageCodersManager.shared.decode(data)
        #expect(image.format == .avif && image.width == 96 && image.height == 64 && image.frames.count == 1)
        #expect(!image.hasAlpha)
        #expect(GeneratedImages.meanDifference(image.bitmap, source) < 4)
    }

    @Test("Alpha survives: translucent pixels stay translucent")
    func alpha() throws {
        let source = GeneratedImages.translucentGradient(width: 40, height: 30)
        let data = try Self.encode(DecodedImage(bitmap: source, format: .avif), .init(quality: 1))
        let image = try AVIFCoder().decode(data, options: .init())
        #expect(image.hasAlpha)
        #expect(GeneratedImages.meanDifference(image.bitmap, source) < 4)
    }

    @Test("An image sequence keeps its frames and durations; firstFrameOnly decodes one")
    func sequence() throws {
        let colors: [RGBA] = [
            .init(r: 255, g: 0, b: 0, a: 255), .init(r: 0, g: 255, b: 0, a: 255), .init(r: 0, g: 0, b: 255, a: 255),
        ]
        var animation = GeneratedImages.animation(width: 32, height: 24, colors: colors, format: .avif)
        animation.frames[1].duration = 0.25
        let data = try Self.encode(animation)
        #expect(ImageHeader(data)?.frameCount == 3)
        let image = try AVIFCoder().decode(data, options: .init())
        #expect(image.frames.count == 3 && image.loopCount == 0)
        #expect(image.frames.map(\.duration) == [0.1, 0.25, 0.1])
        for (frame, color) in zip(image.frames, colors) {
            let pixel = frame.bitmap[16, 12]
            #expect(abs(Int(pixel.r) - Int(color.r)) < 12 && abs(Int(pixel.g) - Int(color.g)) < 12)
        }
        let first = try AVIFCoder().decode(data, options: .init(firstFrameOnly: true))
        #expect(first.frames.count == 1 && first.sourceFrameCount == 3)
    }

    @Test("Thumbnails: decoded, then reduced to fit the box")
    func thumbnail() throws {
        let data = try Self.encode(
            DecodedImage(bitmap: GeneratedImages.gradient(width: 200, height: 100), format: .avif)
        )
        let image = try AVIFCoder().decode(data, options: .init(thumbnailPixelSize: PixelSize(width: 50, height: 50)))
        #expect(image.width == 50 && image.height == 25)
        #expect(image.sourceSize == PixelSize(width: 200, height: 100))
    }

    @Test("Limits refuse before decoding: pixels, frames, animation bytes")
    func limits() throws {
        let still = try Self.encode(
            DecodedImage(bitmap: GeneratedImages.gradient(width: 64, height: 64), format: .avif)
        )
        #expect(throws: CoderError.self) { try AVIFCoder().decode(still, options: .init(maxPixelCount: 64 * 63)) }
        let colors = [RGBA](repeating: .init(r: 9, g: 9, b: 9, a: 255), count: 3)
        let sequence = try Self.encode(GeneratedImages.animation(width: 16, height: 16, colors: colors, format: .avif))
        do {
            _ = try AVIFCoder().decode(sequence, options: .init(maxFrameCount: 2))
            Issue.record("three frames decoded under a two-frame limit")
        } catch {
            #expect(error.code == "limitExceeded")
        }
        #expect(throws: CoderError.self) {
            try AVIFCoder().decode(sequence, options: .init(maxAnimationBytes: 16 * 16 * 4 * 2))
        }
    }

    @Test("Truncated, damaged and foreign data fail with a CoderError, never a crash")
    func badInput() throws {
        let data = try Self.encode(DecodedImage(bitmap: GeneratedImages.noise(width: 64, height: 64), format: .avif))
        for cut in [16, 40, data.count / 2, data.count - 8] {
            #expect(throws: CoderError.self) { try AVIFCoder().decode(data.prefix(cut), options: .init()) }
        }
        var damaged = data
        for index in stride(from: data.count / 2, to: data.count, by: 7) { damaged[index] ^= 0x5A }
        _ = try? AVIFCoder().decode(damaged, options: .init())  // either outcome, no crash
        #expect(throws: CoderError.self) { try AVIFCoder().decode(Data("not an image".utf8), options: .init()) }
        #expect(throws: CoderError.self) { try AVIFCoder().decode(Data(), options: .init()) }
    }

    @Test("irot then imir, applied to pixels, equal the EXIF orientation they are mapped to")
    func transforms() throws {
        // A 3×2 bitmap of six distinct pixels.
        let source = Bitmap(
            width: 3,
            height: 2,
            hasAlpha: false,
            pixels: (0..<6).flatMap { (index: Int) -> [UInt8] in [UInt8(index * 40), UInt8(255 - index * 40), 7, 255] }
        )
        func turnedAnticlockwise(_ bitmap: Bitmap) -> Bitmap {
            var turned = Bitmap(width: bitmap.height, height: bitmap.width)
            for y in 0..<turned.height {
                for x in 0..<turned.width { turned[x, y] = bitmap[bitmap.width - 1 - y, x] }
            }
            return turned
        }
        func mirrored(_ bitmap: Bitmap, leftRight: Bool) -> Bitmap {
            var result = bitmap
            for y in 0..<bitmap.height {
                for x in 0..<bitmap.width {
                    result[x, y] =
                        leftRight ? bitmap[bitmap.width - 1 - x, y] : bitmap[x, bitmap.height - 1 - y]
                }
            }
            return result
        }
        var seen = Set<Int>()
        for turns in 0..<4 {
            for mirror: UInt8? in [nil, 0, 1] {
                var image = avifImage()
                var expected = source
                if turns > 0 {
                    image.transformFlags |= AVIF_TRANSFORM_IROT.rawValue
                    image.irot.angle = UInt8(turns)
                    for _ in 0..<turns { expected = turnedAnticlockwise(expected) }
                }
                if let mirror {
                    image.transformFlags |= AVIF_TRANSFORM_IMIR.rawValue
                    image.imir.mode = mirror
                    expected = mirrored(expected, leftRight: mirror == 1)
                }
                let orientation = AVIFCoder.orientation(image)
                seen.insert(orientation.rawValue)
                let shown = source.applyingOrientation(orientation)
                #expect(
                    shown.pixels == expected.pixels && shown.width == expected.width,
                    "irot \(turns), imir \(String(describing: mirror)) -> \(orientation)"
                )
            }
        }
        #expect(seen == Set(1...8), "every EXIF orientation is reachable")
    }

    @Test("Every AV1 encoder libavif has writes a file that decodes close to its source; speed changes the bytes")
    func encoders() throws {
        let source = DecodedImage(bitmap: GeneratedImages.gradient(width: 128, height: 96), format: .png)
        let available = AVIFEncoderChoice.allCases.filter(\.isAvailable)
        #expect(available.contains(.automatic) && available.contains(.aom))
        for choice in available {
            var options = ImageEncodingOptions(quality: 0.7)
            options.avifEncoder = choice
            let decoded = try AVIFCoder().decode(try Self.encode(source, options), options: .init())
            #expect(decoded.width == 128 && decoded.height == 96, "\(choice)")
            #expect(GeneratedImages.meanDifference(decoded.bitmap, source.bitmap) < 4, "\(choice)")
        }
        // Odd sizes, which SVT-AV1 refuses, are written all the same (by aom).
        for (width, height) in [(45, 31), (64, 33), (451, 300), (9, 9)] {
            var options = ImageEncodingOptions(quality: 0.6)
            options.avifEncoder = .svt
            let odd = DecodedImage(bitmap: GeneratedImages.gradient(width: width, height: height), format: .png)
            let decoded = try AVIFCoder().decode(try Self.encode(odd, options), options: .init())
            #expect(decoded.width == width && decoded.height == height)
        }
        let noise = DecodedImage(bitmap: GeneratedImages.noise(width: 96, height: 96), format: .png)
        var slow = ImageEncodingOptions(quality: 0.6)
        slow.avifSpeed = 2
        #expect(try Self.encode(noise, slow) != Self.encode(noise, .init(quality: 0.6)))
    }

    @Test("An AVIF encode leaves its thread's scheduling as it found it (SVT-AV1 makes it real-time)")
    func schedulingRestored() async throws {
        guard AVIFEncoderChoice.svt.isAvailable else {
            Issue.record("Debian's libavif has SVT-AV1; this one has not")
            return
        }
        let source = DecodedImage(bitmap: GeneratedImages.gradient(width: 64, height: 64), format: .png)
        let policies = try await onOwnThread { () throws -> [Int32] in
            func policy() -> Int32 {
                var policy: Int32 = -1
                var parameters = sched_param()
                _ = pthread_getschedparam(pthread_self(), &policy, &parameters)
                return policy
            }
            let before = policy()
            var options = ImageEncodingOptions(quality: 0.7)
            options.avifEncoder = .svt
            _ = try Self.encode(source, options)
            let afterSVT = policy()
            // Changed by hand (allowed as root, as in CI): put back just the same.
            var realTime = sched_param(sched_priority: 1)
            let madeRealTime = pthread_setschedparam(pthread_self(), SCHED_FIFO, &realTime) == 0
            let scheduling = ThreadScheduling()
            var normal = sched_param(sched_priority: 0)
            _ = pthread_setschedparam(pthread_self(), SCHED_OTHER, &normal)
            scheduling.restore()
            let restored = policy()
            _ = pthread_setschedparam(pthread_self(), SCHED_OTHER, &normal)
            return [before, afterSVT, madeRealTime ? restored : SCHED_FIFO]
        }
        #expect(policies[0] == SCHED_OTHER && policies[1] == SCHED_OTHER, "before, after: \(policies)")
        #expect(policies[2] == SCHED_FIFO, "a saved real-time policy restored: \(policies)")
    }

    @Test(
        "An embedded thumbnail is cut out and decoded when preferred; damaged files fail or decode whole, never crash"
    )
    func embeddedThumbnail() throws {
        let data = try HEIFTestEncoder.redWithBlueThumbnail(format: .avif)
        #expect(ImageFormat(sniffing: data) == .avif)
        var preferring = ImageDecodingOptions()
        preferring.prefersEmbeddedThumbnail = true
        let thumbnail = try AVIFCoder().decode(data, options: preferring)
        #expect(
            thumbnail.width == 64 && thumbnail.height == 32 && thumbnail.sourceSize == PixelSize(width: 64, height: 32)
        )
        #expect(thumbnail.bitmap[32, 16].b > 200 && thumbnail.bitmap[32, 16].r < 60)
        let whole = try AVIFCoder().decode(data, options: .init())
        #expect(whole.width == 256 && whole.height == 128 && whole.bitmap[128, 64].r > 200)
        // The cut file is an AVIF of its own: libavif reads it as any other.
        let cut = try #require(AVIFThumbnail.file(from: data))
        #expect(try AVIFCoder().decode(cut, options: .init()).width == 64)
        // No thumbnail, or one that is not AV1 (HEIC's), or not a container at all: nothing to cut.
        let plain = try AVIFCoder().encode(whole, as: .avif, options: .init(quality: 0.6))
        #expect(AVIFThumbnail.file(from: plain) == nil)
        #expect(try AVIFCoder().decode(plain, options: preferring).width == 256)
        let heic = try HEIFTestEncoder.redWithBlueThumbnail(format: .heic)
        #expect(AVIFThumbnail.file(from: heic) == nil && AVIFThumbnail.file(from: Data("not a box".utf8)) == nil)
        // Cut short anywhere, or a byte changed anywhere in the boxes: a CoderError or an image.
        for length in stride(from: 0, to: data.count, by: 7) {
            _ = try? AVIFCoder().decode(data.prefix(length), options: preferring)
        }
        let headers = min(data.count, 600)
        for index in 0..<headers {
            var damaged = data
            damaged[index] ^= 0x5A
            _ = AVIFThumbnail.file(from: damaged)
            _ = try? AVIFCoder().decode(damaged, options: preferring)
        }
    }
}
