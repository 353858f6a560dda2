import CWebImageShims
import Foundation
import Testing
import WebImageTestSupport

@testable import WebImageCoders

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

    @Test("JPEG: the EXIF orientation from the header, as the decoder reads it")
    func jpegOrientation() throws {
        let bitmap = GeneratedImages.gradient(width: 40, height: 30)
        func jpeg(_ orientation: ImageOrientation) throws -> Data {
            try JPEGCoder().encode(
                DecodedImage(bitmap: bitmap, format: .jpeg, orientation: orientation),
                as: .jpeg,
                options: .init()
            )
        }
        func segment(_ marker: UInt8, _ payload: [UInt8]) -> [UInt8] {
            [0xFF, marker] + Self.bigEndian(payload.count + 2, 2) + payload
        }
        let turned = try jpeg(.right)
        let exif = Array("Exif\0\0".utf8)
        let xmp = segment(0xE1, Array("http://ns.adobe.com/xap/1.0/\0<x:xmpmeta/>".utf8))
        let noTag = segment(0xE1, exif + [0x49, 0x49, 0x2A, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00])
        let cases: [(String, Data, ImageOrientation)] = [
            ("no EXIF", try jpeg(.up), .up),
            ("EXIF right", turned, .right),
            ("EXIF left-mirrored", try jpeg(.leftMirrored), .leftMirrored),
            // An XMP APP1 first: skipped; the Exif one still counts.
            ("XMP before EXIF", Data([0xFF, 0xD8] + xmp) + turned.dropFirst(2), .right),
            // The first Exif APP1 decides, even without the tag (the decoder reads no other).
            ("EXIF without the tag first", Data([0xFF, 0xD8] + noTag) + turned.dropFirst(2), .up),
        ]
        for (name, data, expected) in cases {
            let header = try #require(ImageHeader(data), "\(name)")
            #expect(header.orientation == expected, "\(name)")
            #expect(try JPEGCoder().decode(data, options: .init()).orientation == expected, "\(name): the decoder")
        }
        // Formats whose orientation the header does not read say nil.
        let png = try ImageCodersManager.shared.encode(Self.still, as: .png)
        #expect(try #require(ImageHeader(png)).orientation == nil)
    }

    @Test("ImageHeader.decodedFrameSize and decodedByteCount give what the decoder produces, for every DCT scale")
    func plannedMatchesDecoded() throws {
        let source = PixelSize(width: 803, height: 601)  // odd sides: the decoder rounds up
        let data = try JPEGCoder().encode(
            DecodedImage(bitmap: GeneratedImages.gradient(width: source.width, height: source.height), format: .jpeg),
            as: .jpeg,
            options: .init()
        )
        var seen: Set<PixelSize> = []
        for side in [1, 50, 100, 101, 150, 200, 201, 300, 301, 400, 402, 500, 600, 700, 703, 800] {
            let minimum = PixelSize(width: side, height: side * 3 / 4)
            var options = ImageDecodingOptions()
            options.shrinkOnLoadMinimumSize = minimum
            let decoded = try JPEGCoder().decode(data, options: options)
            let header = try #require(ImageHeader(data))
            let planned = header.decodedFrameSize(with: options)
            // At 1/8 a baseline file's scan is read ahead of libjpeg (its value store counts too).
            let readAhead = planned == JPEGCoder.dctScaled(source, by: 1) ? header.eighthScaleWorkingBytes : 0
            #expect(
                header.decodedByteCount(with: options) == decoded.bitmap.pixels.count + readAhead,
                "minimum \(minimum)"
            )
            #expect(
                PixelSize(width: decoded.bitmap.width, height: decoded.bitmap.height) == planned,
                "minimum \(minimum)"
            )
            #expect(planned.width >= minimum.width && planned.height >= minimum.height)
            seen.insert(planned)
        }
        #expect(seen.count == 8, "every N/8 scale was reached: \(seen)")
    }

    @Test(
        "A progressive JPEG counts libjpeg's coefficient buffer, whatever the DCT scale; baseline its read-ahead at 1/8"
    )
    func progressiveWorkingMemory() throws {
        let image = DecodedImage(bitmap: GeneratedImages.gradient(width: 1000, height: 600), format: .jpeg)
        let progressive = try JPEGCoder().encode(image, as: .jpeg, options: .init(progressive: true))
        let baseline = try JPEGCoder().encode(image, as: .jpeg, options: .init())
        let header = try #require(ImageHeader(progressive))
        // libjpeg's default 4:2:0: luma 125×75 blocks rounded up to its 2×2 sampling (126×76),
        // each chroma plane 63×38; 64 coefficients of 2 bytes a block.
        #expect(header.decoderWorkingBytes == (126 * 76 + 2 * 63 * 38) * 128)
        #expect(try #require(ImageHeader(baseline)).decoderWorkingBytes == 0)
        var thumbnail = ImageDecodingOptions()
        thumbnail.thumbnailPixelSize = PixelSize(width: 100, height: 60)
        let scaled = header.decodedFrameSize(with: thumbnail)
        #expect(scaled == PixelSize(width: 125, height: 75), "the 1/8 DCT scale")
        #expect(header.decodedByteCount(with: thumbnail) == 125 * 75 * 4 + header.decoderWorkingBytes)
        #expect(header.decodedByteCount(with: .init()) == 1000 * 600 * 4 + header.decoderWorkingBytes)
        // Baseline: at 1/8 the read-ahead's store (32 bytes a block) and tables; nothing at other scales.
        let baselineHeader = try #require(ImageHeader(baseline))
        let blocks = 126 * 76 + 2 * 63 * 38
        #expect(baselineHeader.eighthScaleWorkingBytes == wi_jpeg_scan_ahead_bytes(blocks))
        #expect(baselineHeader.eighthScaleWorkingBytes > blocks * 32)
        let readAhead = baselineHeader.eighthScaleWorkingBytes
        #expect(baselineHeader.decodedByteCount(with: thumbnail) == 125 * 75 * 4 + readAhead)
        var half = ImageDecodingOptions()
        half.thumbnailPixelSize = PixelSize(width: 500, height: 300)
        #expect(baselineHeader.decodedByteCount(with: half) == 500 * 300 * 4)
        #expect(try #require(ImageHeader(progressive)).eighthScaleWorkingBytes == 0)
    }

    static func littleEndian(_ value: Int, _ bytes: Int) -> [UInt8] {
        (0..<bytes).map { UInt8(value >> (8 * $0) & 0xFF) }
    }

    static func bigEndian(_ value: Int, _ bytes: Int) -> [UInt8] { littleEndian(value, bytes).reversed() }

    @Test("BMP, TIFF and ICO give their size from the header")
    func undecodedFormats() throws {
        let le = Self.littleEndian
        let be = Self.bigEndian
        // BMP: file header, then BITMAPINFOHEADER (32-bit sizes; negative height = top-down) ...
        let fileHeader = Array("BM".utf8) + le(70, 4) + le(0, 4) + le(54, 4)
        let info =
            fileHeader + le(40, 4) + le(300, 4) + le(-200, 4) + le(1, 2) + le(24, 2) + [UInt8](repeating: 0, count: 24)
        #expect(
            ImageHeader(Data(info))
                == ImageHeader(format: .bmp, size: PixelSize(width: 300, height: 200), frameCount: 1)
        )
        // ... or the OS/2 BITMAPCOREHEADER (16-bit sizes).
        let core =
            fileHeader + le(12, 4) + le(640, 2) + le(480, 2) + le(1, 2) + le(24, 2) + [UInt8](repeating: 0, count: 12)
        #expect(ImageHeader(Data(core))?.size == PixelSize(width: 640, height: 480))
        // TIFF, both byte orders: an IFD with ImageWidth (SHORT) and ImageLength (LONG) among other tags.
        func tiff(bigEndian: Bool) -> Data {
            let u16 = { bigEndian ? be($0, 2) : le($0, 2) }
            let u32 = { bigEndian ? be($0, 4) : le($0, 4) }
            let entry = { (tag: Int, type: Int, value: Int) in
                u16(tag) + u16(type) + u32(1) + (type == 3 ? u16(value) + [0, 0] : u32(value))
            }
            let order: [UInt8] = bigEndian ? [0x4D, 0x4D, 0, 42] : [0x49, 0x49, 42, 0]
            return Data(
                order + u32(8) + u16(3) + entry(254, 4, 0) + entry(256, 3, 1234) + entry(257, 4, 70000) + u32(0)
            )
        }
        for bigEndian in [false, true] {
            #expect(
                ImageHeader(tiff(bigEndian: bigEndian))
                    == ImageHeader(format: .tiff, size: PixelSize(width: 1234, height: 70000), frameCount: 1)
            )
        }
        // ICO: the largest entry; a PNG entry's size is its IHDR's (the directory says 0 = 256+).
        let png = BlankPNG.make(width: 512, height: 300)
        let directory = le(0, 2) + le(1, 2) + le(2, 2)
        let bmpEntry = [16, 16, 0, 0] + le(1, 2) + le(32, 2) + le(40, 4) + le(6 + 32, 4)
        let pngEntry = [0, 0, 0, 0] + le(1, 2) + le(32, 2) + le(png.count, 4) + le(6 + 32 + 40, 4)
        let ico = Data(directory + bmpEntry + pngEntry + [UInt8](repeating: 0, count: 40)) + png
        #expect(ImageHeader(ico) == ImageHeader(format: .ico, size: PixelSize(width: 512, height: 300), frameCount: 1))
        // Cut short: no header.
        #expect(ImageHeader(Data(info.prefix(20))) == nil)
        #expect(ImageHeader(tiff(bigEndian: false).prefix(20)) == nil)
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
        // A 64×64 box of 8000×4000 needs 1/8 scale: 1000×500, and the baseline scan's read-ahead.
        let jpeg = ImageHeader.make(format: .jpeg, width: 8000, height: 4000, frames: 1)
        #expect(jpeg.eighthScaleWorkingBytes > 0)
        #expect(
            jpeg.decodedByteCount(with: .init(thumbnailPixelSize: PixelSize(width: 64, height: 64)))
                == 1000 * 500 * 4 + jpeg.eighthScaleWorkingBytes
        )
        // A 3000 box needs 3000×1500: 3/8 (before: counted at 1/2, 4000×2000, 78 % too much).
        #expect(
            jpeg.decodedByteCount(with: .init(thumbnailPixelSize: PixelSize(width: 3000, height: 3000))) == 3000 * 1500
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
