import Foundation
import Testing
import WebImageCoders
import WebImageTestSupport

@Suite("PNG decoding")
struct PNGDecoderTests {
    /// Per-channel 8-bit value the test pattern has at (x, y), channel c.
    static func value(_ x: Int, _ y: Int, _ c: Int) -> Int { (x * 37 + y * 11 + c * 60) % 256 }

    @Test(
        "Every colour type and bit depth, plain and interlaced",
        arguments: [
            (PNGBuilder.ColorType.gray, 1), (.gray, 2), (.gray, 4), (.gray, 8), (.gray, 16),
            (.rgb, 8), (.rgb, 16), (.grayAlpha, 8), (.grayAlpha, 16), (.rgba, 8), (.rgba, 16),
            (.palette, 1), (.palette, 2), (.palette, 4), (.palette, 8),
        ],
        [false, true]
    )
    func colorTypesAndDepths(layout: (type: PNGBuilder.ColorType, depth: Int), interlaced: Bool) throws {
        let (type, depth) = layout
        let width = 13
        let height = 11
        let maxSample = (1 << depth) - 1
        // Palette: gray ramp with a few colours; samples are palette indices.
        let paletteSize = min(256, 1 << depth)
        let palette = (0..<paletteSize).map { i in
            (UInt8(i * 255 / max(1, paletteSize - 1)), UInt8(255 - i % 256), UInt8(i * 7 % 256), UInt8(255))
        }
        let builder = PNGBuilder(
            width: width,
            height: height,
            colorType: type,
            bitDepth: depth,
            interlaced: interlaced,
            palette: type == .palette ? palette : []
        )
        func sample(_ x: Int, _ y: Int, _ c: Int) -> Int {
            depth >= 8 ? Self.value(x, y, c) : (x + y * 3 + c) % (maxSample + 1)
        }
        let data = builder.build { x, y in
            (0..<type.channels).map { c in
                let v = sample(x, y, c)
                return UInt16(depth == 16 ? v * 257 : v)
            }
        }
        let image = try PNGCoder().decode(data, options: .init())
        #expect(image.width == width && image.height == height)
        #expect(image.hasAlpha == (type == .grayAlpha || type == .rgba))
        for y in 0..<height {
            for x in 0..<width {
                let scale = depth >= 8 ? 1 : 255 / maxSample
                let expected: RGBA
                switch type {
                case .gray:
                    let v = UInt8(sample(x, y, 0) * scale)
                    expected = RGBA(r: v, g: v, b: v)
                case .grayAlpha:
                    expected = RGBA(
                        r: UInt8(sample(x, y, 0)),
                        g: UInt8(sample(x, y, 0)),
                        b: UInt8(sample(x, y, 0)),
                        a: UInt8(sample(x, y, 1))
                    )
                case .rgb:
                    expected = RGBA(r: UInt8(sample(x, y, 0)), g: UInt8(sample(x, y, 1)), b: UInt8(sample(x, y, 2)))
                case .rgba:
                    expected = RGBA(
                        r: UInt8(sample(x, y, 0)),
                        g: UInt8(sample(x, y, 1)),
                        b: UInt8(sample(x, y, 2)),
                        a: UInt8(sample(x, y, 3))
                    )
                case .palette:
                    let entry = palette[sample(x, y, 0)]
                    expected = RGBA(r: entry.0, g: entry.1, b: entry.2)
                }
                guard image.bitmap[x, y] == expected else {
                    Issue.record("pixel (\(x), \(y)) is \(image.bitmap[x, y]), expected \(expected)")
                    return
                }
            }
        }
    }

    @Test("tRNS makes a palette entry, gray level or RGB colour transparent")
    func transparency() throws {
        let palette: [(UInt8, UInt8, UInt8, UInt8)] = [(255, 0, 0, 255), (0, 255, 0, 128), (0, 0, 255, 0)]
        let indexed = try PNGCoder().decode(
            PNGBuilder(width: 3, height: 1, colorType: .palette, palette: palette).build { x, _ in [UInt16(x)] },
            options: .init()
        )
        #expect(indexed.bitmap[0, 0] == RGBA(r: 255, g: 0, b: 0, a: 255))
        #expect(indexed.bitmap[1, 0] == RGBA(r: 0, g: 255, b: 0, a: 128))
        #expect(indexed.bitmap[2, 0].a == 0)
        #expect(indexed.hasAlpha)

        let gray = try PNGCoder().decode(
            PNGBuilder(width: 2, height: 1, colorType: .gray, transparentKey: [40]).build { x, _ in [x == 0 ? 40 : 41]
            },
            options: .init()
        )
        #expect(gray.bitmap[0, 0].a == 0 && gray.bitmap[1, 0] == RGBA(r: 41, g: 41, b: 41, a: 255))

        let rgb = try PNGCoder().decode(
            PNGBuilder(width: 2, height: 1, colorType: .rgb, transparentKey: [1, 2, 3]).build { x, _ in
                x == 0 ? [1, 2, 3] : [1, 2, 4]
            },
            options: .init()
        )
        #expect(rgb.bitmap[0, 0].a == 0 && rgb.bitmap[1, 0].a == 255)
    }

    @Test("Encode then decode is lossless, with and without alpha")
    func roundTrip() throws {
        for bitmap in [
            GeneratedImages.gradient(width: 50, height: 30), GeneratedImages.translucentGradient(width: 50, height: 30),
        ] {
            let data = try PNGCoder().encode(DecodedImage(bitmap: bitmap, format: .png), as: .png, options: .init())
            let image = try PNGCoder().decode(data, options: .init())
            #expect(GeneratedImages.maxDifference(image.bitmap, bitmap) == 0)
            #expect(image.hasAlpha == bitmap.hasAlpha)
        }
    }

    @Test("Truncated and corrupt PNGs give distinct errors")
    func errors() throws {
        let data = PNGBuilder(width: 64, height: 64, colorType: .rgb).build { x, y in [UInt16(x), UInt16(y), 0] }
        #expect(throws: CoderError.truncatedData(.png, "the image data ends early")) {
            try PNGCoder().decode(data.prefix(data.count - 200), options: .init())
        }
        var corrupt = [UInt8](data)
        corrupt[29] ^= 0xFF  // inside IHDR: the CRC no longer matches
        #expect {
            try PNGCoder().decode(Data(corrupt), options: .init())
        } throws: { ($0 as? CoderError)?.code == "corruptData" }
    }
}
