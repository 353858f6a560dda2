import Foundation
import Testing
import WebImageCoders
import WebImageTestSupport

@Suite("Image headers")
struct ImageHeaderTests {
    static let still = DecodedImage(bitmap: GeneratedImages.gradient(width: 48, height: 20), format: .png)
    static let animation = GeneratedImages.animation(
        width: 30,
        height: 10,
        colors: [
            .init(r: 255, g: 0, b: 0, a: 255), .init(r: 0, g: 255, b: 0, a: 255), .init(r: 0, g: 0, b: 255, a: 255),
        ],
        format: .gif
    )

    @Test("Encoded images: size and frames from the header alone", arguments: [ImageFormat.jpeg, .png, .gif, .webp])
    func encoded(format: ImageFormat) throws {
        let still = try #require(ImageHeader(try ImageCodersManager.shared.encode(Self.still, as: format)))
        #expect(still.format == format)
        #expect(still.size == PixelSize(width: 48, height: 20))
        #expect(still.frameCount == 1)
        // Our PNG encoder writes still images (APNG headers: the corpus rows of CorpusManifestTests).
        guard format == .gif || format == .webp else { return }
        let animated = try #require(ImageHeader(try ImageCodersManager.shared.encode(Self.animation, as: format)))
        #expect(animated.size == PixelSize(width: 30, height: 10))
        #expect(animated.frameCount == 3)
    }

    @Test("Truncated, damaged and unknown data have no header; zeros after a signature end at once")
    func refusals() throws {
        let png = try ImageCodersManager.shared.encode(Self.still, as: .png)
        let jpeg = try ImageCodersManager.shared.encode(Self.still, as: .jpeg)
        #expect(ImageHeader(png.prefix(20)) == nil)
        #expect(ImageHeader(jpeg.prefix(4)) == nil)
        #expect(ImageHeader(Data("hello".utf8)) == nil)
        #expect(ImageHeader(Data()) == nil)
        // 64 MiB of zeros after the PNG header: the chunk walk stops at the first bad type.
        var zeros = png.prefix(33)
        zeros.append(Data(count: 64 << 20))
        let start = ContinuousClock.now
        #expect(ImageHeader(zeros)?.size == PixelSize(width: 48, height: 20))
        #expect(ContinuousClock.now - start < .seconds(1))
        // A 0×0 image is refused.
        #expect(ImageHeader(BlankPNG.make(width: 1, height: 1).replacing(bytes: [0, 0, 0, 0], at: 16)) == nil)
    }

    @Test("Decoded bytes: every frame, the first only, a JPEG thumbnail's DCT scale, 0 over the limits")
    func decodedBytes() {
        let header = ImageHeader.make(format: .png, width: 1000, height: 500, frames: 10)
        #expect(header.decodedByteCount(with: .init()) == 1000 * 500 * 4 * 10)
        #expect(header.decodedByteCount(with: .init(firstFrameOnly: true)) == 1000 * 500 * 4)
        #expect(header.decodedByteCount(with: .init(maxFrameCount: 9)) == 0)
        #expect(header.decodedByteCount(with: .init(maxPixelCount: 400_000)) == 0)
        #expect(header.decodedByteCount(with: .init(maxAnimationBytes: 1 << 20)) == 0)
        // A 64×64 box of 8000×4000 needs 1/8 scale: 1000×500.
        let jpeg = ImageHeader.make(format: .jpeg, width: 8000, height: 4000, frames: 1)
        #expect(
            jpeg.decodedByteCount(with: .init(thumbnailPixelSize: PixelSize(width: 64, height: 64))) == 1000 * 500 * 4
        )
        #expect(
            jpeg.decodedByteCount(with: .init(thumbnailPixelSize: PixelSize(width: 3000, height: 3000))) == 4000 * 2000
                * 4
        )
    }
}

extension ImageHeader {
    /// A header as a file of these figures would declare it (a minimal PNG, or a JPEG frame header).
    static func make(format: ImageFormat, width: Int, height: Int, frames: Int) -> ImageHeader {
        func be(_ value: Int, _ count: Int) -> [UInt8] {
            (0..<count).reversed().map { UInt8(value >> ($0 * 8) & 0xFF) }
        }
        var bytes: [UInt8]
        if format == .jpeg {
            bytes = [0xFF, 0xD8, 0xFF, 0xC0, 0, 11, 8] + be(height, 2) + be(width, 2) + [1, 1, 0x11, 0]
        } else {
            bytes = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + be(13, 4) + Array("IHDR".utf8)
            bytes += be(width, 4) + be(height, 4) + [8, 6, 0, 0, 0] + [0, 0, 0, 0]
            bytes += be(8, 4) + Array("acTL".utf8) + be(frames, 4) + be(0, 4) + [0, 0, 0, 0]
            bytes += be(0, 4) + Array("IDAT".utf8)
        }
        return ImageHeader(Data(bytes))!
    }
}

extension Data {
    func replacing(bytes: [UInt8], at offset: Int) -> Data {
        var copy = self
        copy.replaceSubrange(offset..<offset + bytes.count, with: bytes)
        return copy
    }
}
