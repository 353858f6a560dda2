import CWebImageShims
import Foundation

/// An ICC colour profile embedded in an image, read by Little CMS. Decoders carry it on
/// ``DecodedImage/colorProfile`` when ``ImageDecodingOptions/colorPolicy`` is ``ColorPolicy/keep``;
/// encoders write it back.
public struct ColorProfile: Sendable, Hashable {
    /// The colour space the profile describes.
    public enum ColorSpace: Sendable, Hashable {
        case rgb, gray, cmyk, other
    }

    /// The profile's bytes, as embedded.
    public let data: Data
    public let colorSpace: ColorSpace
    /// Whether the profile describes sRGB (its description names it): such images need no
    /// transform and are written untagged.
    public let isSRGB: Bool

    /// The profile in `iccData`; `nil` when lcms cannot read it.
    public init?(iccData: Data) {
        // Everything is decided before `self` is touched: no partly initialised value on the
        // `nil` path.
        guard let (space, isSRGB) = Self.inspect(iccData) else { return nil }
        self.init(data: iccData, colorSpace: space, isSRGB: isSRGB)
    }

    private init(data: Data, colorSpace: ColorSpace, isSRGB: Bool) {
        self.data = data
        self.colorSpace = colorSpace
        self.isSRGB = isSRGB
    }

    /// What lcms reads of a profile: its colour space and whether it describes sRGB.
    private static func inspect(_ iccData: Data) -> (ColorSpace, Bool)? {
        var srgb: Int32 = 0
        let space = iccData.withUnsafeBytes { bytes in
            wi_color_profile_inspect(bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count, &srgb)
        }
        switch space {
        case WI_PROFILE_RGB: return (.rgb, srgb != 0)
        case WI_PROFILE_GRAY: return (.gray, false)
        case WI_PROFILE_CMYK: return (.cmyk, false)
        case WI_PROFILE_OTHER: return (.other, false)
        default: return nil
        }
    }

    /// A transfer curve of a matrix-shaper profile, as lcms's parametric curve of type 4.
    package enum TransferCurve: Sendable {
        /// IEC 61966-2.1's curve.
        case sRGB
        /// A pure power.
        case gamma(Double)
        /// BT.709's (also BT.601's and BT.2020's), inverted.
        case bt709

        /// g, a, b, c, d: Y = (aX + b)^g for X >= d, else cX.
        var parameters: [Double] {
            switch self {
            case .sRGB: [2.4, 1 / 1.055, 0.055 / 1.055, 1 / 12.92, 0.04045]
            case .gamma(let gamma): [gamma, 1, 0, 0, 0]
            case .bt709: [1 / 0.45, 1 / 1.099, 0.099 / 1.099, 1 / 4.5, 0.081]
            }
        }
    }

    /// A matrix-shaper RGB profile made by lcms from the chromaticities (x, y) of red, green, blue
    /// and white, with the transfer `curve`.
    package static func rgb(
        red: (Double, Double),
        green: (Double, Double),
        blue: (Double, Double),
        white: (Double, Double),
        curve: TransferCurve
    ) -> ColorProfile? {
        let chromaticities = [red.0, red.1, green.0, green.1, blue.0, blue.1, white.0, white.1]
        var bytes: UnsafeMutablePointer<UInt8>?
        var size = 0
        guard wi_color_profile_create_rgb(chromaticities, curve.parameters, &bytes, &size) == WI_OK, let bytes else {
            return nil
        }
        defer { free(bytes) }
        return ColorProfile(iccData: Data(bytes: bytes, count: size))
    }

    /// A gray profile (D50 white) with a pure power `gamma`, made by lcms.
    package static func gray(gamma: Double) -> ColorProfile? {
        var bytes: UnsafeMutablePointer<UInt8>?
        var size = 0
        guard wi_color_profile_create_gray(gamma, &bytes, &size) == WI_OK, let bytes else { return nil }
        defer { free(bytes) }
        return ColorProfile(iccData: Data(bytes: bytes, count: size))
    }

    /// lcms's built-in sRGB profile ("sRGB built-in"); `nil` only if lcms cannot write it.
    public static let sRGB: ColorProfile? = {
        var bytes: UnsafeMutablePointer<UInt8>?
        var size = 0
        guard wi_color_profile_create_srgb(&bytes, &size) == WI_OK, let bytes else { return nil }
        defer { free(bytes) }
        return ColorProfile(iccData: Data(bytes: bytes, count: size))
    }()

    /// Display P3 (DCI-P3 primaries, D65, sRGB's curve): what iPhones write. Made by lcms.
    public static let displayP3 = rgb(
        red: (0.680, 0.320),
        green: (0.265, 0.690),
        blue: (0.150, 0.060),
        white: (0.3127, 0.3290),
        curve: .sRGB
    )!

    /// Adobe RGB (1998): what cameras write (gamma 563/256). Made by lcms.
    public static let adobeRGB = rgb(
        red: (0.640, 0.330),
        green: (0.210, 0.710),
        blue: (0.150, 0.060),
        white: (0.3127, 0.3290),
        curve: .gamma(563.0 / 256.0)
    )!
}

/// What a decode does with an embedded colour profile.
public enum ColorPolicy: String, Sendable, Hashable, CaseIterable {
    /// Convert the pixels to sRGB with the profile, relative colorimetric without black-point
    /// compensation (libvips's `icc_transform`, so imgproxy's colours), and drop it. Untagged and
    /// sRGB-tagged images are left as they are. The default.
    case convertToSRGB = "srgb"
    /// ``convertToSRGB`` with black-point compensation (lcms's `cmsFLAGS_BLACKPOINTCOMPENSATION`):
    /// a source's black maps to sRGB's black. Differs from the default mostly for CMYK and
    /// print profiles, whose black is not zero; always converts through Little CMS.
    case convertToSRGBWithBlackPointCompensation = "srgb-bpc"
    /// Leave the pixels as stored and carry the profile on ``DecodedImage/colorProfile`` (the
    /// encoders write it back).
    case keep
    /// Leave the pixels as stored and drop the profile (the numbers as if they were sRGB).
    case ignore

    /// Whether the pixels end in sRGB (either conversion).
    public var convertsToSRGB: Bool { self == .convertToSRGB || self == .convertToSRGBWithBlackPointCompensation }
}
