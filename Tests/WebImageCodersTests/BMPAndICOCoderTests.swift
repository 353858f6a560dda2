import Foundation
import Testing
import WebImageTestSupport

@testable import WebImageCoders

@Suite("BMP and ICO coding")
struct BMPAndICOCoderTests {
    /// Bools, not arrays: a failing comparison of pixel arrays makes the test library diff them.
    static func samePixels(_ a: Bitmap, _ b: Bitmap) -> Bool {
        guard a.width == b.width, a.height == b.height else { return false }
        for y in 0..<a.height {
            for x in 0..<a.width where a[x, y] != b[x, y] { return false }
        }
        return true
    }

    @Test("BMP round trips: 24-bit opaque, 32-bit with alpha (a V4 header), odd widths padded")
    func bmpRoundTrip() throws {
        let opaque = GeneratedImages.gradient(width: 127, height: 64)
        let data = try BMPCoder().encode(DecodedImage(bitmap: opaque, format: .bmp), as: .bmp, options: .init())
        #expect(data.prefix(2) == Data("BM".utf8) && data[28] == 24)
        #expect(ImageHeader(data)?.size == PixelSize(width: 127, height: 64))
        let decoded = try ImageCodersManager.shared.decode(data)
        #expect(decoded.format == .bmp && !decoded.hasAlpha && Self.samePixels(decoded.bitmap, opaque))
        let translucent = GeneratedImages.translucentGradient(width: 33, height: 17)
        let alpha = try BMPCoder().encode(DecodedImage(bitmap: translucent, format: .bmp), as: .bmp, options: .init())
        #expect(alpha[28] == 32 && alpha[14] == 108)
        let back = try ImageCodersManager.shared.decode(alpha)
        #expect(back.hasAlpha && Self.samePixels(back.bitmap, translucent))
    }

    /// A BMP written by hand: `bits` per pixel, `palette` (BGRA entries), `rows` top row first
    /// as stored bytes (each padded here), bottom-up unless `topDown`.
    static func handMade(
        width: Int,
        bits: Int,
        palette: [[UInt8]] = [],
        rows: [[UInt8]],
        topDown: Bool = false,
        compression: UInt32 = 0,
        masks: [UInt32] = []
    ) -> Data {
        let rowBytes = ((width * bits + 31) / 32) * 4
        let stored = (topDown ? rows : rows.reversed()).flatMap {
            $0 + [UInt8](repeating: 0, count: rowBytes - $0.count)
        }
        let headerEnd = 14 + 40 + masks.count * 4 + palette.count * 4
        var data = Data("BM".utf8)
        data.appendLittleEndian(UInt32(headerEnd + stored.count))
        data.appendLittleEndian(UInt32(0))
        data.appendLittleEndian(UInt32(headerEnd))
        data.appendLittleEndian(UInt32(40))
        data.appendLittleEndian(Int32(width))
        data.appendLittleEndian(Int32(topDown ? -rows.count : rows.count))
        data.appendLittleEndian(UInt16(1))
        data.appendLittleEndian(UInt16(bits))
        data.appendLittleEndian(compression)
        data.appendLittleEndian(UInt32(stored.count))
        data.append(Data(count: 16))
        for mask in masks { data.appendLittleEndian(mask) }
        for entry in palette { data.append(contentsOf: entry) }
        data.append(contentsOf: stored)
        return data
    }

    @Test("BMP reads 1, 4 and 8-bit palettes, 16-bit 5-6-5 bit fields and top-down rows")
    func bmpVariants() throws {
        let red = RGBA(r: 255, g: 0, b: 0)
        let blue = RGBA(r: 0, g: 0, b: 255)
        let palette: [[UInt8]] = [[255, 0, 0, 0], [0, 0, 255, 0]]  // BGRx: blue, red
        let one = try BMPCoder().decode(
            Self.handMade(width: 3, bits: 1, palette: palette, rows: [[0b0100_0000], [0b1010_0000]]),
            options: .init()
        )
        #expect(
            one.bitmap[0, 0] == blue && one.bitmap[1, 0] == red && one.bitmap[0, 1] == red && one.bitmap[1, 1] == blue
        )
        let four = try BMPCoder().decode(
            Self.handMade(width: 2, bits: 4, palette: palette, rows: [[0x10]]),
            options: .init()
        )
        #expect(four.bitmap[0, 0] == red && four.bitmap[1, 0] == blue)
        let eight = try BMPCoder().decode(
            Self.handMade(width: 2, bits: 8, palette: palette, rows: [[1, 0], [0, 1]], topDown: true),
            options: .init()
        )
        #expect(eight.bitmap[0, 0] == red && eight.bitmap[1, 0] == blue && eight.bitmap[0, 1] == blue)
        // 5-6-5: pure green is 0x07E0.
        let sixteen = try BMPCoder().decode(
            Self.handMade(width: 1, bits: 16, rows: [[0xE0, 0x07]], compression: 3, masks: [0xF800, 0x07E0, 0x001F]),
            options: .init()
        )
        #expect(sixteen.bitmap[0, 0] == RGBA(r: 0, g: 255, b: 0))
        // 32-bit BI_RGB whose fourth bytes are all 0: opaque (the byte is unused there).
        let unused = try BMPCoder().decode(Self.handMade(width: 1, bits: 32, rows: [[0, 0, 255, 0]]), options: .init())
        #expect(unused.bitmap[0, 0] == red && !unused.hasAlpha)
    }

    @Test("Damaged BMPs fail with a CoderError naming the cause, never a crash")
    func bmpDamage() throws {
        let good = Self.handMade(
            width: 4,
            bits: 24,
            rows: [[UInt8](repeating: 9, count: 12), [UInt8](repeating: 9, count: 12)]
        )
        for cut in [0, 10, 20, 40, 54, good.count - 1] {
            #expect(throws: CoderError.self, "cut at \(cut)") {
                try BMPCoder().decode(good.prefix(cut), options: .init())
            }
        }
        var rle = Self.handMade(width: 4, bits: 8, palette: [[0, 0, 0, 0]], rows: [[0, 0, 0, 0]])
        rle[30] = 1
        #expect { try BMPCoder().decode(rle, options: .init()) } throws: { "\($0)".contains("compression 1") }
        var huge = good
        huge.replaceSubrange(18..<22, with: [0xFF, 0xFF, 0xFF, 0x00])
        #expect(throws: CoderError.self) { try BMPCoder().decode(huge, options: .init()) }
    }

    @Test("ICO: written as one PNG entry (at most 256×256); the largest entry read, PNG or bitmap with its AND mask")
    func icons() throws {
        let picture = GeneratedImages.translucentGradient(width: 48, height: 32)
        let data = try ICOCoder().encode(DecodedImage(bitmap: picture, format: .ico), as: .ico, options: .init())
        #expect(data.prefix(4) == Data([0, 0, 1, 0]) && data[6] == 48 && data[7] == 32)
        #expect(ImageHeader(data)?.size == PixelSize(width: 48, height: 32))
        let back = try ImageCodersManager.shared.decode(data)
        #expect(back.format == .ico && Self.samePixels(back.bitmap, picture))
        let big = GeneratedImages.gradient(width: 257, height: 10)
        #expect(throws: CoderError.self) {
            try ICOCoder().encode(DecodedImage(bitmap: big, format: .ico), as: .ico, options: .init())
        }

        // Two entries: a 2×2 24-bit bitmap whose AND mask clears one pixel, and a 1×1 one.
        let small = Self.iconEntry(width: 1, colors: [[0, 255, 0]], mask: [0])
        let large = Self.iconEntry(
            width: 2,
            colors: [[0, 0, 255], [255, 0, 0], [0, 0, 255], [255, 0, 0]],
            mask: [0b0100_0000, 0]
        )
        var icon = Data([0, 0, 1, 0, 2, 0])
        var offset = 6 + 32
        for (size, entry) in [(1, small), (2, large)] {
            icon.append(contentsOf: [UInt8(size), UInt8(size), 0, 0, 1, 0, 24, 0])
            icon.appendLittleEndian(UInt32(entry.count))
            icon.appendLittleEndian(UInt32(offset))
            offset += entry.count
        }
        icon.append(small)
        icon.append(large)
        let decoded = try ImageCodersManager.shared.decode(icon)
        #expect(decoded.width == 2 && decoded.height == 2 && decoded.hasAlpha)
        // Rows are stored bottom-up: the mask's first row is the bottom one.
        #expect(decoded.bitmap[0, 1] == RGBA(r: 255, g: 0, b: 0) && decoded.bitmap[1, 1].a == 0)
        #expect(decoded.bitmap[0, 0].a == 255)
        var broken = icon
        broken.replaceSubrange(18..<22, with: [0xFF, 0xFF, 0, 0])  // the first entry's offset points outside
        broken.replaceSubrange(34..<38, with: [0xFF, 0xFF, 0, 0])
        #expect(throws: CoderError.self) { try ImageCodersManager.shared.decode(broken) }
    }

    /// An ICO bitmap entry: a 40-byte header (height doubled), BGR rows bottom-up, the AND mask.
    static func iconEntry(width: Int, colors: [[UInt8]], mask: [UInt8]) -> Data {
        let rowBytes = ((width * 24 + 31) / 32) * 4
        var data = Data()
        data.appendLittleEndian(UInt32(40))
        data.appendLittleEndian(Int32(width))
        data.appendLittleEndian(Int32(width * 2))
        data.appendLittleEndian(UInt16(1))
        data.appendLittleEndian(UInt16(24))
        data.append(Data(count: 24))
        for row in 0..<width {
            let pixels = colors[row * width..<(row + 1) * width].flatMap { $0 }
            data.append(contentsOf: pixels + [UInt8](repeating: 0, count: rowBytes - pixels.count))
        }
        for row in 0..<width { data.append(contentsOf: [mask[row], 0, 0, 0]) }
        return data
    }
}

@Suite("TIFF coding")
struct TIFFCoderTests {
    @Test("TIFF round trips RGB and RGBA (straight alpha); the header and the decode agree")
    func roundTrip() throws {
        let opaque = GeneratedImages.gradient(width: 130, height: 70)
        let data = try TIFFCoder().encode(DecodedImage(bitmap: opaque, format: .tiff), as: .tiff, options: .init())
        #expect(ImageFormat(sniffing: data) == .tiff)
        #expect(ImageHeader(data)?.size == PixelSize(width: 130, height: 70))
        let decoded = try ImageCodersManager.shared.decode(data)
        #expect(decoded.format == .tiff && !decoded.hasAlpha && BMPAndICOCoderTests.samePixels(decoded.bitmap, opaque))
        let translucent = GeneratedImages.translucentGradient(width: 41, height: 300)
        let alpha = try TIFFCoder().encode(
            DecodedImage(bitmap: translucent, format: .tiff),
            as: .tiff,
            options: .init()
        )
        let back = try ImageCodersManager.shared.decode(alpha)
        // libtiff's reader premultiplies; straightened again, a colour is within 255 / alpha.
        var close = back.width == 41 && back.height == 300
        for y in 0..<300 where close {
            for x in 0..<41 {
                let (a, b) = (back.bitmap[x, y], translucent[x, y])
                let tolerance = b.a == 0 ? 255 : 255 / Int(b.a) + 1
                if a.a != b.a || abs(Int(a.r) - Int(b.r)) > tolerance || abs(Int(a.g) - Int(b.g)) > tolerance
                    || abs(Int(a.b) - Int(b.b)) > tolerance
                {
                    close = false
                }
            }
        }
        #expect(back.hasAlpha && close)
    }

    @Test("Damaged or oversized TIFFs fail with a CoderError, never a crash")
    func damage() throws {
        let good = try TIFFCoder().encode(
            DecodedImage(bitmap: GeneratedImages.gradient(width: 64, height: 64), format: .tiff),
            as: .tiff,
            options: .init()
        )
        for cut in [4, 8, 16, good.count / 2, good.count - 20] {
            #expect(throws: CoderError.self, "cut at \(cut)") {
                try TIFFCoder().decode(good.prefix(cut), options: .init())
            }
        }
        #expect(throws: CoderError.limitExceeded(.tiff, "64x64 is over the 100-pixel limit")) {
            try TIFFCoder().decode(good, options: ImageDecodingOptions(maxPixelCount: 100))
        }
    }
}
