import Foundation
import Testing
import WebImageCoders
import WebImageTestSupport

@Suite("JPEG decoding")
struct JPEGDecoderTests {
    let source = GeneratedImages.gradient(width: 120, height: 80)

    func encode(
        _ bitmap: Bitmap,
        progressive: Bool = false,
        model: JPEGCoder.ColorModel = .rgb,
        orientation: ImageOrientation = .up
    ) throws -> Data {
        try JPEGCoder(colorModel: model).encode(
            DecodedImage(bitmap: bitmap, format: .jpeg, orientation: orientation),
            as: .jpeg,
            options: .init(quality: 0.95, progressive: progressive)
        )
    }

    @Test("Baseline and progressive decode to the encoded picture", arguments: [false, true])
    func baselineAndProgressive(progressive: Bool) throws {
        let image = try JPEGCoder().decode(encode(source, progressive: progressive), options: .init())
        #expect(image.format == .jpeg)
        #expect(image.width == 120 && image.height == 80)
        #expect(image.frames.count == 1 && image.loopCount == 1)
        #expect(!image.hasAlpha && !image.isPartial)
        #expect(GeneratedImages.meanDifference(image.bitmap, source) < 2)
    }

    @Test("Grayscale JPEG becomes gray RGBA")
    func grayscale() throws {
        let image = try JPEGCoder().decode(encode(source, model: .grayscale), options: .init())
        let pixel = image.bitmap[60, 40]
        #expect(pixel.r == pixel.g && pixel.g == pixel.b && pixel.a == 255)
        // Luma of the source pixel, within JPEG error.
        let s = source[60, 40]
        let luma = 0.299 * Double(s.r) + 0.587 * Double(s.g) + 0.114 * Double(s.b)
        #expect(abs(Double(pixel.r) - luma) < 4)
    }

    @Test("Adobe (inverted) CMYK JPEG converts back to the right colours")
    func adobeCMYK() throws {
        let colors = [RGBA(r: 200, g: 30, b: 40), RGBA(r: 20, g: 160, b: 220), RGBA(r: 250, g: 250, b: 250)]
        let blocks = GeneratedImages.blocks(width: 64, height: 64, colors: colors, blockSize: 16)
        let data = try encode(blocks, model: .cmyk)
        let image = try JPEGCoder().decode(data, options: .init())
        // Compare block centres, away from edge ringing.
        for (x, y) in [(8, 8), (24, 8), (40, 8)] {
            let expected = blocks[x, y]
            let got = image.bitmap[x, y]
            #expect(
                abs(Int(got.r) - Int(expected.r)) < 8 && abs(Int(got.g) - Int(expected.g)) < 8
                    && abs(Int(got.b) - Int(expected.b)) < 8,
                "\(got) vs \(expected)"
            )
        }
    }

    @Test("EXIF orientation is read, and applied when asked", arguments: ImageOrientation.allCases)
    func exifOrientation(orientation: ImageOrientation) throws {
        let data = try encode(source, orientation: orientation)
        let stored = try JPEGCoder().decode(data, options: .init())
        #expect(stored.orientation == orientation)
        #expect(stored.width == 120 && stored.height == 80)

        let upright = try JPEGCoder().decode(data, options: .init(applyOrientation: true))
        #expect(upright.orientation == .up)
        #expect(upright.width == (orientation.swapsDimensions ? 80 : 120))
        #expect(GeneratedImages.maxDifference(upright.bitmap, stored.bitmap.applyingOrientation(orientation)) == 0)
    }

    @Test("Thumbnail uses DCT scaling and fits the box")
    func thumbnail() throws {
        let big = GeneratedImages.gradient(width: 1600, height: 1200)
        let data = try encode(big)
        let thumbnail = try JPEGCoder().decode(
            data,
            options: .init(thumbnailPixelSize: PixelSize(width: 256, height: 256))
        )
        #expect(thumbnail.width == 256 && thumbnail.height == 192)
        #expect(thumbnail.sourceSize == PixelSize(width: 1600, height: 1200))
        let reference = try JPEGCoder().decode(data, options: .init()).bitmap.resized(
            to: PixelSize(width: 256, height: 192)
        )
        #expect(GeneratedImages.meanDifference(thumbnail.bitmap, reference) < 3)
    }

    @Test("Shrink on load: the smallest N/8 DCT scale covering the minimum, not resized further")
    func shrinkOnLoad() throws {
        let data = try encode(GeneratedImages.gradient(width: 2000, height: 1332))
        for (minimum, expected) in [
            (PixelSize(width: 512, height: 342), PixelSize(width: 750, height: 500)),  // 3/8
            (PixelSize(width: 250, height: 100), PixelSize(width: 250, height: 167)),  // 1/8
            (PixelSize(width: 1001, height: 10), PixelSize(width: 1250, height: 833)),  // 5/8
            (PixelSize(width: 1900, height: 10), PixelSize(width: 2000, height: 1332)),  // 8/8
        ] {
            var options = ImageDecodingOptions()
            options.shrinkOnLoadMinimumSize = minimum
            let image = try JPEGCoder().decode(data, options: options)
            #expect(PixelSize(width: image.width, height: image.height) == expected, "\(minimum)")
            #expect(image.sourceSize == PixelSize(width: 2000, height: 1332))
        }
        // With a thumbnail box too, the box is still what is delivered.
        var both = ImageDecodingOptions(thumbnailPixelSize: PixelSize(width: 100, height: 100))
        both.shrinkOnLoadMinimumSize = PixelSize(width: 50, height: 50)
        let thumbnail = try JPEGCoder().decode(data, options: both)
        #expect(thumbnail.width == 100 && thumbnail.height == 67)
    }

    @Test("Progressive at 1/8: baseline's pixels, and the luma's AC scans are never read")
    func progressiveEighth() throws {
        // Progressive and baseline encodes of one picture hold the same quantised coefficients.
        let picture = GeneratedImages.photoLike(width: 640, height: 480)
        let progressive = try encode(picture, progressive: true)
        var eighth = ImageDecodingOptions()
        eighth.shrinkOnLoadMinimumSize = PixelSize(width: 80, height: 60)
        let expected = try JPEGCoder().decode(encode(picture), options: eighth)
        let image = try JPEGCoder().decode(progressive, options: eighth)
        #expect(image.width == 80 && image.height == 60)
        #expect(image.bitmap.pixels == expected.bitmap.pixels)
        // The file's last scan refines the luma's AC coefficients. Pointed at a Huffman table the
        // file never defines, it fails a full-size decode; at 1/8 it is never read at all.
        let lastScan = try #require(Self.lastScan(of: progressive))
        #expect(lastScan.component == 1 && lastScan.firstCoefficient > 0)
        var broken = progressive
        broken[broken.startIndex + lastScan.offset + 6] = 0x33  // table 3, undefined
        let fromBroken = try JPEGCoder().decode(broken, options: eighth)
        #expect(fromBroken.bitmap.pixels == expected.bitmap.pixels)
        #expect {
            try JPEGCoder().decode(broken, options: .init())
        } throws: { error in
            (error as? CoderError)?.code == "corruptData"
        }
    }

    /// Where the last scan's SOS marker is, its (single) component's id and its first coefficient.
    static func lastScan(of data: Data) -> (offset: Int, component: UInt8, firstCoefficient: UInt8)? {
        let bytes = [UInt8](data)
        // In entropy-coded data 0xFF is always followed by 0x00 or a restart marker.
        guard let offset = (0..<bytes.count - 8).last(where: { bytes[$0] == 0xFF && bytes[$0 + 1] == 0xDA }),
            bytes[offset + 4] == 1
        else { return nil }
        return (offset, bytes[offset + 5], bytes[offset + 7])
    }

    @Test("Truncated data is a truncatedData error")
    func truncated() throws {
        let data = try encode(GeneratedImages.noise(width: 64, height: 64))
        #expect {
            try JPEGCoder().decode(data.prefix(data.count / 2), options: .init())
        } throws: { error in
            (error as? CoderError)?.code == "truncatedData"
        }
    }
}
