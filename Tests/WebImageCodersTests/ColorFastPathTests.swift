import CWebImageShims
import Foundation
import Testing
import WebImageTestEncoders
import WebImageTestSupport

@testable import WebImageCoders

/// The table paths beside Little CMS: matrix-shaper RGB profiles convert within one level of lcms
/// on every input colour, gray profiles exactly as lcms does, and the rendering intent is
/// libvips's (relative colorimetric without black-point compensation) unless BPC is asked for.
@Suite("Colour management: the matrix-shaper fast path and libvips's intent")
struct ColorFastPathTests {
    static let wideGamuts: [(name: String, profile: ColorProfile)] = [
        ("Display P3", .displayP3),
        ("Adobe RGB", .adobeRGB),
        (
            "ProPhoto",
            .rgb(
                red: (0.7347, 0.2653),
                green: (0.1596, 0.8404),
                blue: (0.0366, 0.0001),
                white: (0.3457, 0.3585),
                curve: .gamma(1.8)
            )!
        ),
        (
            "Rec. 2020",
            .rgb(
                red: (0.708, 0.292),
                green: (0.170, 0.797),
                blue: (0.131, 0.046),
                white: (0.3127, 0.3290),
                curve: .bt709
            )!
        ),
    ]

    @Test("Every one of the 256³ colours is within one level of lcms per channel; alpha untouched", arguments: 0..<4)
    func sweep(_ index: Int) throws {
        let (name, profile) = Self.wideGamuts[index]
        let fast = try #require(ColorTransform.toSRGB(from: profile, layout: WI_PIXELS_RGBA))
        let lcms = try #require(
            ColorTransform.toSRGB(from: profile, layout: WI_PIXELS_RGBA, options: WI_COLOR_LCMS_ONLY)
        )
        #expect(fast.path == WI_COLOR_PATH_MATRIX_SHAPER, "\(name) takes the tables")
        #expect(lcms.path == WI_COLOR_PATH_LCMS)
        let count = 1 << 24
        var ours = [UInt8](repeating: 0, count: count * 4)
        for colour in 0..<count {
            ours[colour * 4] = UInt8(colour & 255)
            ours[colour * 4 + 1] = UInt8((colour >> 8) & 255)
            ours[colour * 4 + 2] = UInt8(colour >> 16)
            ours[colour * 4 + 3] = UInt8(truncatingIfNeeded: colour &* 7)
        }
        var theirs = ours
        ours.withUnsafeMutableBytes { fast.apply(to: $0, count: count) }
        theirs.withUnsafeMutableBytes { lcms.apply(to: $0, count: count) }
        var worst = 0
        var worstColour = 0
        var alphaChanged = 0
        for colour in 0..<count {
            for channel in 0..<3 {
                let difference = abs(Int(ours[colour * 4 + channel]) - Int(theirs[colour * 4 + channel]))
                if difference > worst { (worst, worstColour) = (difference, colour) }
            }
            if ours[colour * 4 + 3] != UInt8(truncatingIfNeeded: colour &* 7) { alphaChanged += 1 }
        }
        #expect(worst <= 1, "\(name): \(worst) levels apart at 0x\(String(worstColour, radix: 16))")
        #expect(alphaChanged == 0)
        // The tables really convert: a saturated red of the wide gamut is outside sRGB's.
        #expect(ours[0xFF * 4] == 255 && ours[0xFF * 4 + 1] < 30, "\(name) red → \(ours[0xFF * 4 ..< 0xFF * 4 + 3])")
    }

    @Test("Gray profiles convert through lcms's own answer for each level; BPC asked for goes to lcms")
    func grayAndOptions() throws {
        let gray = try #require(ColorProfile.gray(gamma: 1.8))
        let table = try #require(ColorTransform.toSRGB(from: gray, layout: WI_PIXELS_GRAY_IN_RGBA))
        let lcms = try #require(
            ColorTransform.toSRGB(from: gray, layout: WI_PIXELS_GRAY_IN_RGBA, options: WI_COLOR_LCMS_ONLY)
        )
        #expect(table.path == WI_COLOR_PATH_GRAY_TABLE && lcms.path == WI_COLOR_PATH_LCMS)
        var ours = (0..<256).flatMap { level -> [UInt8] in [UInt8(level), 0, 0, UInt8(255 - level)] }
        var theirs = ours
        ours.withUnsafeMutableBytes { table.apply(to: $0, count: 256) }
        theirs.withUnsafeMutableBytes { lcms.apply(to: $0, count: 256) }
        #expect(ours == theirs)
        #expect(ours[128 * 4] > 128, "gamma 1.8 mid-gray is lighter in sRGB: \(ours[128 * 4])")
        let compensated = try #require(
            ColorTransform.toSRGB(from: .displayP3, policy: .convertToSRGBWithBlackPointCompensation)
        )
        #expect(compensated.path == WI_COLOR_PATH_LCMS)
        #expect(ColorTransform.toSRGB(from: .displayP3, policy: .convertToSRGB)?.path == WI_COLOR_PATH_MATRIX_SHAPER)
        #expect(ColorTransform.toSRGB(from: .displayP3, policy: .keep) == nil)
        #expect(ColorPolicy(rawValue: "srgb-bpc") == .convertToSRGBWithBlackPointCompensation)
    }

    @Test("A P3 JPEG's rows convert as they decode: the same pixels as converting the whole decode after")
    func bandedDecode() throws {
        let bitmap = GeneratedImages.gradient(width: 300, height: 77)
        var image = DecodedImage(bitmap: bitmap, format: .jpeg)
        image.colorProfile = .displayP3
        let data = try JPEGCoder().encode(image, as: .jpeg, options: .init(quality: 0.9))
        let banded = try JPEGCoder().decode(data, options: ImageDecodingOptions())
        var whole = try JPEGCoder().decode(data, options: ImageDecodingOptions(colorPolicy: .keep))
        #expect(whole.colorProfile != nil && banded.colorProfile == nil)
        let transform = try #require(ColorTransform.toSRGB(from: .displayP3, policy: .convertToSRGB))
        transform.apply(to: &whole.frames[0].bitmap)
        #expect(banded.bitmap.pixels == whole.bitmap.pixels)
        let ignored = try JPEGCoder().decode(data, options: ImageDecodingOptions(colorPolicy: .ignore))
        #expect(ignored.bitmap.pixels != banded.bitmap.pixels, "the profile changed the pixels")
    }

    /// Flat 16×16 blocks, dark ones among them (where black-point compensation moves colours most).
    static let blockColours: [RGBA] = [
        RGBA(r: 0, g: 0, b: 0), RGBA(r: 40, g: 40, b: 40), RGBA(r: 255, g: 255, b: 255), RGBA(r: 30, g: 60, b: 90),
        RGBA(r: 200, g: 40, b: 100), RGBA(r: 0, g: 120, b: 200), RGBA(r: 120, g: 110, b: 100), RGBA(r: 255, g: 0, b: 0),
    ]

    /// The Adobe-inverted inks `JPEGCoder(colorModel: .cmyk)` stores for `colour` (full black
    /// generation: K from the brightest channel).
    static func storedInks(_ colour: RGBA) -> [UInt8] {
        let (r, g, b) = (Int(colour.r), Int(colour.g), Int(colour.b))
        let brightest = max(r, g, b)
        guard brightest > 0 else { return [255, 255, 255, 0] }
        return [r, g, b].map { UInt8(255 - (brightest - $0) * 255 / brightest) } + [UInt8(brightest)]
    }

    @Test("A CMYK JPEG with a print profile: within 1 ΔE of lcms without BPC; srgb-bpc matches lcms with it")
    func cmykIntent() throws {
        let profileData = try CMYKTestProfile.make(blackLift: 0.12)
        let profile = try #require(ColorProfile(iccData: profileData))
        var image = DecodedImage(
            bitmap: GeneratedImages.blocks(
                width: 16 * Self.blockColours.count,
                height: 16,
                colors: Self.blockColours,
                blockSize: 16
            ),
            format: .jpeg
        )
        image.colorProfile = profile
        let data = try JPEGCoder(colorModel: .cmyk).encode(image, as: .jpeg, options: .init(quality: 1))
        func centres(_ decoded: DecodedImage) -> [UInt8] {
            (0..<Self.blockColours.count).flatMap { index -> [UInt8] in
                let pixel = decoded.bitmap[index * 16 + 8, 8]
                return [pixel.r, pixel.g, pixel.b]
            }
        }
        let plain = centres(try JPEGCoder().decode(data, options: ImageDecodingOptions()))
        let compensated = centres(
            try JPEGCoder().decode(
                data,
                options: ImageDecodingOptions(colorPolicy: .convertToSRGBWithBlackPointCompensation)
            )
        )
        let inks = Self.blockColours.flatMap(Self.storedInks)
        let reference = try LittleCMSReference.cmykToSRGB(
            inks,
            profile: profileData,
            inverted: true,
            blackPointCompensation: false
        )
        let referenceBPC = try LittleCMSReference.cmykToSRGB(
            inks,
            profile: profileData,
            inverted: true,
            blackPointCompensation: true
        )
        let plainError = try LittleCMSReference.meanDeltaE(plain, reference)
        let compensatedError = try LittleCMSReference.meanDeltaE(compensated, referenceBPC)
        #expect(plainError <= 1, "default: \(plainError) ΔE from lcms without BPC (\(plain) against \(reference))")
        #expect(compensatedError <= 1, "srgb-bpc: \(compensatedError) ΔE from lcms with BPC")
        // The intents really differ for this profile: its black is a dark gray, not sRGB's black.
        let apart = try LittleCMSReference.meanDeltaE(reference, referenceBPC)
        #expect(apart > 2, "BPC moves this profile's colours by \(apart) ΔE")
        #expect(plain[0] >= 20, "full ink prints the profile's dark gray without BPC: \(plain[0 ..< 3])")
    }
}
