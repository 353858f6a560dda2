import CWebImageShims
import Foundation
import Testing
import WebImageTestSupport

@testable import WebImageCoders

/// Embedded ICC profiles: JPEGs tagged Display P3, Adobe RGB, gray and sRGB decode to sRGB
/// pixels by default (checked against the colour science done independently here, not through
/// lcms), keep their profile on request, and untagged or sRGB-tagged pixels are untouched.
@Suite("Colour management: ICC profiles to sRGB with Little CMS")
struct ColorManagementTests {
    /// Solid 16×16 blocks of these colours (values as stored, in the profile's space).
    static let colors: [RGBA] = [
        RGBA(r: 200, g: 100, b: 50), RGBA(r: 40, g: 160, b: 90), RGBA(r: 90, g: 80, b: 200),
        RGBA(r: 128, g: 128, b: 128), RGBA(r: 250, g: 240, b: 230), RGBA(r: 20, g: 30, b: 25),
    ]

    /// A lossless-enough JPEG (q100, 4:4:4 is not needed: solid blocks) of the colours, tagged.
    static func taggedJPEG(_ profile: ColorProfile?) throws -> Data {
        var image = DecodedImage(
            bitmap: GeneratedImages.blocks(width: 96, height: 16, colors: colors, blockSize: 16),
            format: .jpeg
        )
        image.colorProfile = profile
        return try JPEGCoder().encode(image, as: .jpeg, options: .init(quality: 1))
    }

    /// The block centres' colours of a decoded image.
    static func centres(_ image: DecodedImage) -> [RGBA] {
        (0..<colors.count).map { image.bitmap[$0 * 16 + 8, 8] }
    }

    // sRGB's transfer functions (IEC 61966-2.1).
    static func linearFromSRGB(_ value: Double) -> Double {
        value <= 0.04045 ? value / 12.92 : pow((value + 0.055) / 1.055, 2.4)
    }
    static func srgbFromLinear(_ value: Double) -> Double {
        let clamped = min(max(value, 0), 1)
        return clamped <= 0.0031308 ? clamped * 12.92 : 1.055 * pow(clamped, 1 / 2.4) - 0.055
    }

    /// Linear RGB in a space with these primaries (D65 white) to linear sRGB: through XYZ with the
    /// primaries' matrices, computed here from the chromaticities.
    static func toLinearSRGB(_ rgb: [Double], primaries: [(Double, Double)]) -> [Double] {
        func matrix(_ p: [(Double, Double)]) -> [[Double]] {
            let white = (0.3127, 0.3290)
            let columns = p.map { [$0.0 / $0.1, 1, (1 - $0.0 - $0.1) / $0.1] }
            let w = [white.0 / white.1, 1, (1 - white.0 - white.1) / white.1]
            let m = [
                [columns[0][0], columns[1][0], columns[2][0]], [1, 1, 1],
                [columns[0][2], columns[1][2], columns[2][2]],
            ]
            let s = solve(m, w)
            return (0..<3).map { row in (0..<3).map { m[row][$0] * s[$0] } }
        }
        let toXYZ = matrix(primaries)
        let srgbToXYZ = matrix([(0.64, 0.33), (0.30, 0.60), (0.15, 0.06)])
        let xyz = (0..<3).map { row in (0..<3).reduce(0.0) { $0 + toXYZ[row][$1] * rgb[$1] } }
        return solve(srgbToXYZ, xyz)
    }

    /// Solves the 3×3 system m·x = v (Cramer's rule).
    static func solve(_ m: [[Double]], _ v: [Double]) -> [Double] {
        func det(_ a: [[Double]]) -> Double {
            a[0][0] * (a[1][1] * a[2][2] - a[1][2] * a[2][1]) - a[0][1] * (a[1][0] * a[2][2] - a[1][2] * a[2][0])
                + a[0][2] * (a[1][0] * a[2][1] - a[1][1] * a[2][0])
        }
        let d = det(m)
        return (0..<3).map { column in
            var replaced = m
            for row in 0..<3 { replaced[row][column] = v[row] }
            return det(replaced) / d
        }
    }

    @Test("A Display P3 JPEG decodes to the sRGB the colour science says (within 2 of 255)")
    func displayP3() throws {
        let data = try Self.taggedJPEG(.displayP3)
        let raw = try JPEGCoder().decode(data, options: ImageDecodingOptions(colorPolicy: .ignore))
        let converted = try JPEGCoder().decode(data, options: ImageDecodingOptions())
        #expect(converted.colorProfile == nil, "converted pixels are sRGB: untagged")
        let p3 = [(0.680, 0.320), (0.265, 0.690), (0.150, 0.060)]
        for (stored, got) in zip(Self.centres(raw), Self.centres(converted)) {
            let linear = [stored.r, stored.g, stored.b].map { Self.linearFromSRGB(Double($0) / 255) }
            let expected = Self.toLinearSRGB(linear, primaries: p3).map { Self.srgbFromLinear($0) * 255 }
            let actual = [got.r, got.g, got.b].map(Double.init)
            let error = zip(expected, actual).map { abs($0 - $1) }.max()!
            #expect(error <= 2.5, "P3 \(stored) became \(got), expected \(expected)")
        }
        // Saturated colours move: the converted image is not the raw one.
        #expect(Self.centres(raw) != Self.centres(converted))
    }

    @Test("An Adobe RGB JPEG converts with its gamma 2.2 curve")
    func adobeRGB() throws {
        let data = try Self.taggedJPEG(.adobeRGB)
        let raw = try JPEGCoder().decode(data, options: ImageDecodingOptions(colorPolicy: .ignore))
        let converted = try JPEGCoder().decode(data, options: ImageDecodingOptions())
        let adobe = [(0.640, 0.330), (0.210, 0.710), (0.150, 0.060)]
        for (stored, got) in zip(Self.centres(raw), Self.centres(converted)) {
            let linear = [stored.r, stored.g, stored.b].map { pow(Double($0) / 255, 563.0 / 256.0) }
            let expected = Self.toLinearSRGB(linear, primaries: adobe).map { Self.srgbFromLinear($0) * 255 }
            let actual = [got.r, got.g, got.b].map(Double.init)
            let error = zip(expected, actual).map { abs($0 - $1) }.max()!
            #expect(error <= 2.5, "Adobe RGB \(stored) became \(got), expected \(expected)")
        }
    }

    @Test("Untagged and sRGB-tagged JPEGs are bit-identical to a decode that ignores profiles")
    func srgbUntouched() throws {
        // lcms's own sRGB profile, described "sRGB built-in".
        let srgb = try #require(ColorProfile.sRGB)
        #expect(srgb.isSRGB && srgb.colorSpace == .rgb)
        #expect(!ColorProfile.displayP3.isSRGB)
        for profile in [nil, srgb] {
            let data = try Self.taggedJPEG(profile)
            let plain = try JPEGCoder().decode(data, options: ImageDecodingOptions(colorPolicy: .ignore))
            let converted = try JPEGCoder().decode(data, options: ImageDecodingOptions())
            #expect(plain.bitmap.pixels == converted.bitmap.pixels)
            #expect(converted.colorProfile == nil)
        }
    }

    @Test("keep: pixels untouched, the profile's bytes carried and written back by the JPEG encoder")
    func keepRoundTrips() throws {
        let data = try Self.taggedJPEG(.displayP3)
        let kept = try JPEGCoder().decode(data, options: ImageDecodingOptions(colorPolicy: .keep))
        let raw = try JPEGCoder().decode(data, options: ImageDecodingOptions(colorPolicy: .ignore))
        #expect(kept.colorProfile?.data == ColorProfile.displayP3.data)
        #expect(kept.bitmap.pixels == raw.bitmap.pixels)
        #expect(raw.colorProfile == nil)
        let again = try JPEGCoder().encode(kept, as: .jpeg, options: .init(quality: 0.9))
        let reread = try JPEGCoder().decode(again, options: ImageDecodingOptions(colorPolicy: .keep))
        #expect(reread.colorProfile?.data == ColorProfile.displayP3.data)
        // A profile larger than one APP2 segment (64 KB) is split and put back together.
        var padded = [UInt8](ColorProfile.displayP3.data)
        padded += [UInt8](repeating: 0, count: 150_000)
        let size = UInt32(padded.count)
        padded[0] = UInt8(size >> 24)
        padded[1] = UInt8(size >> 16 & 0xFF)
        padded[2] = UInt8(size >> 8 & 0xFF)
        padded[3] = UInt8(size & 0xFF)
        var large = kept
        large.colorProfile = ColorProfile(iccData: Data(padded))
        #expect(large.colorProfile != nil)
        let split = try JPEGCoder().encode(large, as: .jpeg, options: .init())
        let joined = try JPEGCoder().decode(split, options: ImageDecodingOptions(colorPolicy: .keep))
        #expect(joined.colorProfile?.data.count == padded.count)
    }

    @Test("A gray JPEG with a linear gray profile converts to sRGB gray; thumbnails convert too")
    func grayProfile() throws {
        let gray = try #require(ColorProfile.gray(gamma: 1.0))
        var bitmap = Bitmap(width: 64, height: 64)
        for y in 0..<64 { for x in 0..<64 { bitmap[x, y] = RGBA(r: 128, g: 128, b: 128) } }
        var image = DecodedImage(bitmap: bitmap, format: .jpeg)
        image.colorProfile = gray
        let coder = JPEGCoder(colorModel: .grayscale)
        let data = try coder.encode(image, as: .jpeg, options: .init(quality: 1))
        let converted = try JPEGCoder().decode(data, options: ImageDecodingOptions())
        // Linear 128/255 is 0.502: sRGB-encoded 0.735, 188 of 255.
        let expected = Self.srgbFromLinear(128.0 / 255) * 255
        let pixel = converted.bitmap[32, 32]
        #expect(abs(Double(pixel.r) - expected) <= 2 && pixel.r == pixel.g && pixel.g == pixel.b, "\(pixel)")
        // The DCT-scaled thumbnail path converts the same way.
        var thumbnail = ImageDecodingOptions()
        thumbnail.thumbnailPixelSize = PixelSize(width: 8, height: 8)
        let small = try JPEGCoder().decode(data, options: thumbnail)
        #expect(small.width == 8 && abs(Double(small.bitmap[4, 4].r) - expected) <= 2)
    }

    @Test("Transforms are built once per profile and reused")
    func transformsAreCached() {
        let first = ColorTransform.toSRGB(from: .displayP3, layout: WI_PIXELS_RGBA)
        let second = ColorTransform.toSRGB(from: .displayP3, layout: WI_PIXELS_RGBA)
        #expect(first != nil && first === second)
        #expect(ColorTransform.toSRGB(from: .displayP3, layout: WI_PIXELS_CMYK) == nil, "an RGB profile on CMYK")
        #expect(ColorProfile(iccData: Data(repeating: 7, count: 400)) == nil, "garbage is no profile")
    }

    @Test("A PNG's iCCP profile converts (RGB and gray), keeps and round-trips like JPEG's")
    func pngProfiles() throws {
        var image = DecodedImage(
            bitmap: GeneratedImages.blocks(width: 96, height: 16, colors: Self.colors, blockSize: 16),
            format: .png
        )
        image.colorProfile = .displayP3
        let data = try PNGCoder().encode(image, as: .png, options: .init())
        let raw = try PNGCoder().decode(data, options: ImageDecodingOptions(colorPolicy: .ignore))
        #expect(raw.bitmap.pixels == image.bitmap.pixels, "PNG is lossless: ignore gives the stored numbers")
        let kept = try PNGCoder().decode(data, options: ImageDecodingOptions(colorPolicy: .keep))
        #expect(kept.colorProfile?.data == ColorProfile.displayP3.data)
        // The same conversion as the P3 JPEG: the transform does not depend on the container.
        let converted = try PNGCoder().decode(data, options: ImageDecodingOptions())
        let jpegConverted = try JPEGCoder().decode(try Self.taggedJPEG(.displayP3), options: ImageDecodingOptions())
        let jpegRaw = try JPEGCoder().decode(try Self.taggedJPEG(.displayP3), options: .init(colorPolicy: .ignore))
        var expected = jpegRaw
        expected.colorProfile = .displayP3
        let direct = try expected.applyingColorPolicy(.convertToSRGB, deadline: CodingDeadline(ImageDecodingOptions()))
        #expect(direct.bitmap.pixels == jpegConverted.bitmap.pixels)
        #expect(converted.colorProfile == nil)
        #expect(Self.centres(converted) != Self.centres(raw))
        // A gray PNG with a linear gray profile.
        var gray = DecodedImage(bitmap: Bitmap(width: 8, height: 8), format: .png)
        for y in 0..<8 { for x in 0..<8 { gray.frames[0].bitmap[x, y] = RGBA(r: 128, g: 128, b: 128) } }
        gray.colorProfile = ColorProfile.gray(gamma: 1.0)
        // PNGs are written RGB: a gray profile cannot be embedded, so the pixels are converted
        // to sRGB first (linear 128 is sRGB 188) and written untagged.
        let rgbWithGray = try PNGCoder().decode(
            try PNGCoder().encode(gray, as: .png, options: .init()),
            options: .init()
        )
        #expect(abs(Int(rgbWithGray.bitmap[4, 4].r) - 188) <= 1 && rgbWithGray.colorProfile == nil)
    }

    @Test("A WebP's ICCP profile converts, keeps, and is written back (still and animated)")
    func webpProfiles() throws {
        var image = DecodedImage(
            bitmap: GeneratedImages.blocks(width: 96, height: 16, colors: Self.colors, blockSize: 16),
            format: .webp
        )
        image.colorProfile = .displayP3
        let lossless = ImageEncodingOptions(lossless: true)
        let data = try WebPCoder().encode(image, as: .webp, options: lossless)
        let raw = try WebPCoder().decode(data, options: ImageDecodingOptions(colorPolicy: .ignore))
        #expect(raw.bitmap.pixels == image.bitmap.pixels)
        let kept = try WebPCoder().decode(data, options: ImageDecodingOptions(colorPolicy: .keep))
        #expect(kept.colorProfile?.data == ColorProfile.displayP3.data)
        let converted = try WebPCoder().decode(data, options: ImageDecodingOptions())
        let direct = try kept.applyingColorPolicy(.convertToSRGB, deadline: CodingDeadline(ImageDecodingOptions()))
        #expect(converted.bitmap.pixels == direct.bitmap.pixels && converted.colorProfile == nil)
        #expect(Self.centres(converted) != Self.centres(raw))

        var animation = DecodedImage(
            frames: [
                .init(bitmap: image.bitmap, duration: 0.1),
                .init(bitmap: GeneratedImages.gradient(width: 96, height: 16), duration: 0.1),
            ],
            format: .webp
        )
        animation.colorProfile = .adobeRGB
        let animated = try WebPCoder().encode(animation, as: .webp, options: lossless)
        let keptAnimation = try WebPCoder().decode(animated, options: ImageDecodingOptions(colorPolicy: .keep))
        #expect(keptAnimation.frames.count == 2 && keptAnimation.colorProfile?.data == ColorProfile.adobeRGB.data)
        let convertedAnimation = try WebPCoder().decode(animated, options: ImageDecodingOptions())
        #expect(convertedAnimation.colorProfile == nil)
        #expect(convertedAnimation.frames[1].bitmap.pixels != keptAnimation.frames[1].bitmap.pixels)
    }
}
