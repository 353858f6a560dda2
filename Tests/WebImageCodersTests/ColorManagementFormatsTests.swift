import Foundation
import Testing
import WebImageTestEncoders
import WebImageTestSupport

@testable import WebImageCoders

/// Colour spaces beyond JPEG's, PNG's and WebP's ICC profiles: AVIF's and HEIF's `nclx` and
/// `colr` boxes, JPEG XL's colour encoding, PNG's `sRGB`/`gAMA`/`cHRM` chunks and APNG frames.
/// Each conversion is checked against the same decode with profiles ignored, converted from the
/// space the file declares by the library's lcms transform (``ColorManagementTests`` checks
/// that transform against colour science done by hand).
@Suite("Colour management: AVIF, HEIF, JPEG XL, PNG colour chunks and APNG")
struct ColorManagementFormatsTests {
    static var blocks: Bitmap {
        GeneratedImages.blocks(width: 96, height: 16, colors: ColorManagementTests.colors, blockSize: 16)
    }

    /// `raw` (decoded with profiles ignored) converted to sRGB from `profile`.
    static func converted(_ raw: DecodedImage, from profile: ColorProfile) throws -> DecodedImage {
        var tagged = raw
        tagged.colorProfile = profile
        return try tagged.applyingColorPolicy(.convertToSRGB, deadline: CodingDeadline(ImageDecodingOptions()))
    }

    static func largestDifference(_ a: Bitmap, _ b: Bitmap) -> Int {
        precondition(a.pixels.count == b.pixels.count)
        return zip(a.pixels, b.pixels).map { abs(Int($0) - Int($1)) }.max() ?? 0
    }

    static let ignore = ImageDecodingOptions(colorPolicy: .ignore)

    @Test("An AVIF whose nclx says Display P3 converts like a P3 profile; sRGB and PQ stay as decoded")
    func avifNCLX() throws {
        let p3 = try AVIFTestEncoder.encode(Self.blocks, primaries: 12, transfer: 13)
        let raw = try AVIFCoder().decode(p3, options: Self.ignore)
        let converted = try AVIFCoder().decode(p3, options: ImageDecodingOptions())
        #expect(converted.colorProfile == nil)
        #expect(Self.largestDifference(converted.bitmap, try Self.converted(raw, from: .displayP3).bitmap) <= 1)
        #expect(ColorManagementTests.centres(converted) != ColorManagementTests.centres(raw))
        let kept = try AVIFCoder().decode(p3, options: ImageDecodingOptions(colorPolicy: .keep))
        #expect(kept.colorProfile?.colorSpace == .rgb && kept.bitmap.pixels == raw.bitmap.pixels)

        // BT.2020 primaries with BT.709's curve: converted (a wider gamut than sRGB).
        let bt2020 = try AVIFTestEncoder.encode(Self.blocks, primaries: 9, transfer: 14)
        let wide = try AVIFCoder().decode(bt2020, options: ImageDecodingOptions())
        #expect(wide.bitmap.pixels != (try AVIFCoder().decode(bt2020, options: Self.ignore)).bitmap.pixels)

        // sRGB (BT.709 primaries, sRGB curve) and PQ (no matrix-shaper profile) are left alone.
        for (primaries, transfer) in [(UInt16(1), UInt16(13)), (2, 2), (9, 16)] {
            let data = try AVIFTestEncoder.encode(Self.blocks, primaries: primaries, transfer: transfer)
            let plain = try AVIFCoder().decode(data, options: Self.ignore)
            let decoded = try AVIFCoder().decode(data, options: ImageDecodingOptions())
            #expect(decoded.bitmap.pixels == plain.bitmap.pixels, "nclx \(primaries)/\(transfer)")
        }
    }

    @Test("keep: the AVIF encoder writes the profile and the decoder reads it back")
    func avifKeepRoundTrips() throws {
        var image = DecodedImage(bitmap: Self.blocks, format: .avif)
        image.colorProfile = .adobeRGB
        let data = try AVIFCoder().encode(image, as: .avif, options: ImageEncodingOptions(quality: 0.9))
        let kept = try AVIFCoder().decode(data, options: ImageDecodingOptions(colorPolicy: .keep))
        #expect(kept.colorProfile?.data == ColorProfile.adobeRGB.data)
        let converted = try AVIFCoder().decode(data, options: ImageDecodingOptions())
        #expect(converted.colorProfile == nil && converted.bitmap.pixels != kept.bitmap.pixels)
    }

    @Test("A HEIC's ICC profile converts, in the embedded thumbnail too (it shows the primary's colours)")
    func heifProfile() throws {
        let primaryColor = RGBA(r: 200, g: 100, b: 50)
        let thumbnailColor = RGBA(r: 40, g: 160, b: 90)
        let data = try HEIFTestEncoder.encode(
            GeneratedImages.solid(width: 128, height: 128, color: primaryColor),
            iccProfile: ColorProfile.displayP3.data,
            thumbnail: GeneratedImages.solid(width: 64, height: 64, color: thumbnailColor),
            thumbnailBox: 32
        )
        let raw = try HEIFCoder().decode(data, options: Self.ignore)
        let converted = try HEIFCoder().decode(data, options: ImageDecodingOptions())
        #expect(Self.largestDifference(converted.bitmap, try Self.converted(raw, from: .displayP3).bitmap) <= 1)
        #expect(converted.bitmap[64, 64] != raw.bitmap[64, 64])

        var small = ImageDecodingOptions(thumbnailPixelSize: PixelSize(width: 16, height: 16))
        let thumbnail = try HEIFCoder().decode(data, options: small)
        small.colorPolicy = .ignore
        let rawThumbnail = try HEIFCoder().decode(data, options: small)
        let rawCentre = rawThumbnail.bitmap[8, 8]
        #expect(abs(Int(rawCentre.g) - Int(thumbnailColor.g)) <= 8, "the embedded thumbnail was read: \(rawCentre)")
        let expected = try Self.converted(rawThumbnail, from: .displayP3).bitmap[8, 8]
        #expect(thumbnail.bitmap[8, 8] == expected && expected != rawCentre)
    }

    @Test("A lossless JPEG XL with a Display P3 profile converts; an sRGB one is untouched")
    func jxlProfile() throws {
        let data = try JXLTestEncoder.encode([Self.blocks], iccProfile: ColorProfile.displayP3.data)
        let raw = try JXLCoder().decode(data, options: Self.ignore)
        #expect(raw.bitmap.pixels == Self.blocks.pixels, "lossless: the stored numbers")
        let converted = try JXLCoder().decode(data, options: ImageDecodingOptions())
        #expect(converted.colorProfile == nil)
        #expect(Self.largestDifference(converted.bitmap, try Self.converted(raw, from: .displayP3).bitmap) <= 2)
        #expect(ColorManagementTests.centres(converted) != ColorManagementTests.centres(raw))
        let kept = try JXLCoder().decode(data, options: ImageDecodingOptions(colorPolicy: .keep))
        #expect(kept.colorProfile?.colorSpace == .rgb && kept.bitmap.pixels == raw.bitmap.pixels)

        let srgb = try JXLTestEncoder.encode([Self.blocks])
        let plain = try JXLCoder().decode(srgb, options: ImageDecodingOptions())
        #expect(plain.bitmap.pixels == Self.blocks.pixels && plain.colorProfile == nil)
    }

    /// A 96×16 RGB PNG of the blocks with `chunks`.
    static func png(_ chunks: [PNGBuilder.ColorChunk]) -> Data {
        var builder = PNGBuilder(width: 96, height: 16, colorType: .rgb)
        builder.colorChunks = chunks
        let bitmap = blocks
        return builder.build { x, y in
            let pixel = bitmap[x, y]
            return [UInt16(pixel.r), UInt16(pixel.g), UInt16(pixel.b)]
        }
    }

    @Test("PNG: gAMA (with cHRM's primaries) converts as browsers do; gAMA 1/2.2 alone and sRGB stay as stored")
    func pngColorChunks() throws {
        let linear = try PNGCoder().decode(Self.png([.gamma(1.0)]), options: ImageDecodingOptions())
        let linearProfile = try #require(
            ColorProfile.rgb(
                red: (0.64, 0.33),
                green: (0.30, 0.60),
                blue: (0.15, 0.06),
                white: (0.3127, 0.3290),
                curve: .gamma(1)
            )
        )
        let stored = DecodedImage(bitmap: Self.blocks, format: .png)
        #expect(Self.largestDifference(linear.bitmap, try Self.converted(stored, from: linearProfile).bitmap) <= 1)
        // Linear gray 128 is sRGB 188.
        #expect(abs(Int(linear.bitmap[3 * 16 + 8, 8].r) - 188) <= 1)

        let p3Chunks = PNGBuilder.ColorChunk.chromaticities(
            white: (0.3127, 0.3290),
            red: (0.680, 0.320),
            green: (0.265, 0.690),
            blue: (0.150, 0.060)
        )
        let p3 = try PNGCoder().decode(Self.png([.gamma(0.45455), p3Chunks]), options: ImageDecodingOptions())
        let p3Gamma = try #require(
            ColorProfile.rgb(
                red: (0.680, 0.320),
                green: (0.265, 0.690),
                blue: (0.150, 0.060),
                white: (0.3127, 0.3290),
                curve: .gamma(1 / 0.45455)
            )
        )
        #expect(Self.largestDifference(p3.bitmap, try Self.converted(stored, from: p3Gamma).bitmap) <= 1)
        #expect(p3.bitmap.pixels != Self.blocks.pixels)

        for chunks: [PNGBuilder.ColorChunk] in [[.gamma(0.45455)], [.srgb], [.srgb, .gamma(0.45455)], []] {
            let decoded = try PNGCoder().decode(Self.png(chunks), options: ImageDecodingOptions())
            #expect(decoded.bitmap.pixels == Self.blocks.pixels, "\(chunks)")
        }
        #expect(
            try PNGCoder().decode(Self.png([.gamma(1.0)]), options: Self.ignore).bitmap.pixels == Self.blocks.pixels
        )

        var gray = PNGBuilder(width: 4, height: 4, colorType: .gray)
        gray.colorChunks = [.gamma(1.0)]
        let linearGray = try PNGCoder().decode(gray.build { _, _ in [128] }, options: ImageDecodingOptions())
        #expect(abs(Int(linearGray.bitmap[2, 2].r) - 188) <= 1)
    }

    @Test("APNG: every frame is composed as stored and then converted with the file's iCCP profile")
    func apngProfile() throws {
        var builder = PNGBuilder(width: 16, height: 16, colorType: .rgb)
        builder.colorChunks = [.iccProfile(ColorProfile.displayP3.data)]
        let colors = ColorManagementTests.colors
        let data = builder.buildAnimated(frames: [
            .init(width: 16, height: 16) { _, _ in [UInt16(colors[0].r), UInt16(colors[0].g), UInt16(colors[0].b)] },
            .init(x: 4, y: 4, width: 8, height: 8) { _, _ in
                [UInt16(colors[1].r), UInt16(colors[1].g), UInt16(colors[1].b)]
            },
        ])
        let raw = try PNGCoder().decode(data, options: Self.ignore)
        let converted = try PNGCoder().decode(data, options: ImageDecodingOptions())
        #expect(raw.frames.count == 2 && converted.frames.count == 2)
        let expected = try Self.converted(raw, from: .displayP3)
        for index in 0..<2 {
            #expect(converted.frames[index].bitmap.pixels == expected.frames[index].bitmap.pixels)
            #expect(converted.frames[index].bitmap.pixels != raw.frames[index].bitmap.pixels)
        }
        #expect(raw.frames[1].bitmap[8, 8] == colors[1] && raw.frames[1].bitmap[1, 1] == colors[0])
        let kept = try PNGCoder().decode(data, options: ImageDecodingOptions(colorPolicy: .keep))
        #expect(kept.colorProfile?.data == ColorProfile.displayP3.data)
    }

    @Test("An Adobe-inverted CMYK JPEG with a CMYK profile converts through it; without one, naively")
    func cmykProfile() throws {
        let profile = try #require(ColorProfile(iccData: try CMYKTestProfile.make()))
        #expect(profile.colorSpace == .cmyk)
        var image = DecodedImage(bitmap: Self.blocks, format: .jpeg)
        let naive = try JPEGCoder().decode(
            try JPEGCoder(colorModel: .cmyk).encode(image, as: .jpeg, options: .init(quality: 1)),
            options: ImageDecodingOptions()
        )
        image.colorProfile = profile
        let tagged = try JPEGCoder(colorModel: .cmyk).encode(image, as: .jpeg, options: .init(quality: 1))
        let kept = try JPEGCoder().decode(tagged, options: ImageDecodingOptions(colorPolicy: .keep))
        #expect(kept.colorProfile == nil, "CMYK pixels leave the decoder as RGB: the profile is spent")
        let converted = try JPEGCoder().decode(tagged, options: ImageDecodingOptions())
        // The profile swaps what cyan and magenta do: each block comes out with red and green
        // exchanged; the naive conversion gives the colours back as they were.
        for (index, color) in ColorManagementTests.colors.enumerated() {
            let got = converted.bitmap[index * 16 + 8, 8]
            let plain = naive.bitmap[index * 16 + 8, 8]
            let swapped = [Int(color.g), Int(color.r), Int(color.b)]
            #expect(
                zip([got.r, got.g, got.b].map(Int.init), swapped).allSatisfy { abs($0 - $1) <= 6 },
                "\(color) → \(got)"
            )
            #expect(
                zip([plain.r, plain.g, plain.b].map(Int.init), [color.r, color.g, color.b].map(Int.init)).allSatisfy {
                    abs($0 - $1) <= 6
                },
                "naive \(color) → \(plain)"
            )
        }
        // ignore: the profile is not used, so the naive conversion.
        let ignored = try JPEGCoder().decode(tagged, options: ImageDecodingOptions(colorPolicy: .ignore))
        #expect(ignored.bitmap[8, 8] == naive.bitmap[8, 8])
    }
}
