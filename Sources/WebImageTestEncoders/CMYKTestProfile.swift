import CLCMS2
import Foundation

/// A CMYK ICC profile made with Little CMS for tests: its A2B0 table is sampled from a formula
/// that swaps what cyan and magenta ink do (red = (1 − magenta)(1 − black), green =
/// (1 − cyan)(1 − black), blue = (1 − yellow)(1 − black), as sRGB), so a decoder that uses the
/// profile gives visibly different colours from the naive conversion an untagged CMYK image gets.
public enum CMYKTestProfile {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// The profile's bytes (ICC v2, output class, Lab PCS, a 9-point CLUT for two intents). `blackLift` raises
    /// every colour towards white by that share, so full ink prints a dark gray (sRGB level
    /// `255 × blackLift`), as paper and ink do: the black point that black-point compensation
    /// moves. 0 prints sRGB's black.
    public static func make(blackLift: Double = 0) throws -> Data {
        guard let srgb = cmsCreate_sRGBProfile(), let lab = cmsCreateLab2Profile(nil) else {
            throw Failure(description: "lcms cannot make the sRGB and Lab profiles")
        }
        defer {
            cmsCloseProfile(srgb)
            cmsCloseProfile(lab)
        }
        // sRGB (16-bit) to the v2 Lab encoding a v2 profile's lut16 holds (lcms's TYPE_RGB_16 and
        // TYPE_Lab_16, whose macros Swift does not import). Version 2: lcms writes a bare CLUT
        // only as lut16Type.
        let rgb16 = UInt32(PT_RGB) << 16 | 3 << 3 | 2
        let lab16 = UInt32(PT_Lab) << 16 | 3 << 3 | 2
        guard let toLab = cmsCreateTransform(srgb, rgb16, lab, lab16, UInt32(INTENT_RELATIVE_COLORIMETRIC), 0)
        else { throw Failure(description: "cmsCreateTransform sRGB → Lab") }
        defer { cmsDeleteTransform(toLab) }
        guard let profile = cmsCreateProfilePlaceholder(nil) else { throw Failure(description: "placeholder") }
        defer { cmsCloseProfile(profile) }
        cmsSetProfileVersion(profile, 2.1)
        cmsSetDeviceClass(profile, cmsSigOutputClass)
        cmsSetColorSpace(profile, cmsSigCmykData)
        cmsSetPCS(profile, cmsSigLabData)
        guard let pipeline = cmsPipelineAlloc(nil, 4, 3) else { throw Failure(description: "cmsPipelineAlloc") }
        defer { cmsPipelineFree(pipeline) }
        guard let table = cmsStageAllocCLut16bit(nil, 9, 4, 3, nil) else { throw Failure(description: "CLUT") }
        struct Cargo {
            var toLab: cmsHTRANSFORM
            var lift: Double
        }
        var cargo = Cargo(toLab: toLab, lift: min(max(blackLift, 0), 1))
        let sampler: cmsSAMPLER16 = { input, output, cargo in
            guard let input, let output, let cargo else { return 0 }
            let settings = cargo.load(as: Cargo.self)
            func share(_ ink: UInt16) -> Double { 1 - Double(ink) / 65535 }
            let black = share(input[3])
            var rgb: [UInt16] = [share(input[1]), share(input[0]), share(input[2])].map {
                UInt16(((settings.lift + (1 - settings.lift) * $0 * black) * 65535).rounded())
            }
            cmsDoTransform(settings.toLab, &rgb, output, 1)
            return 1
        }
        guard cmsStageSampleCLut16bit(table, sampler, &cargo, 0) != 0,
            cmsPipelineInsertStage(pipeline, cmsAT_BEGIN, table) != 0
        else { throw Failure(description: "cannot fill the CLUT") }
        // The same table for perceptual (A2B0) and relative colorimetric (A2B1), and the way back
        // (B2A0, B2A1), as print profiles carry them: lcms finds a CMYK profile's black point by a
        // round trip through both directions.
        let inverse = try inverseTable(lab: lab, srgb: srgb, lift: cargo.lift)
        defer { cmsPipelineFree(inverse) }
        guard cmsWriteTag(profile, cmsSigAToB0Tag, UnsafeRawPointer(pipeline)) != 0,
            cmsWriteTag(profile, cmsSigAToB1Tag, UnsafeRawPointer(pipeline)) != 0,
            cmsWriteTag(profile, cmsSigBToA0Tag, UnsafeRawPointer(inverse)) != 0,
            cmsWriteTag(profile, cmsSigBToA1Tag, UnsafeRawPointer(inverse)) != 0
        else { throw Failure(description: "cmsWriteTag A2B0, A2B1, B2A0, B2A1") }
        // lcms 2.14 reports no size for this profile when asked first: save into room enough and
        // read the size from the header.
        var bytes = [UInt8](repeating: 0, count: 1 << 20)
        var room = UInt32(bytes.count)
        guard cmsSaveProfileToMem(profile, &bytes, &room) != 0 else { throw Failure(description: "save") }
        let size = Int(bytes[0]) << 24 | Int(bytes[1]) << 16 | Int(bytes[2]) << 8 | Int(bytes[3])
        guard size >= 128, size <= bytes.count else { throw Failure(description: "profile size \(size)") }
        return Data(bytes[..<size])
    }
}

extension CMYKTestProfile {
    /// Lab (v2 encoding) to the inks that print it: sRGB through the forward formula inverted,
    /// with full black generation.
    fileprivate static func inverseTable(lab: cmsHPROFILE, srgb: cmsHPROFILE, lift: Double) throws -> OpaquePointer {
        let rgb16 = UInt32(PT_RGB) << 16 | 3 << 3 | 2
        let lab16 = UInt32(PT_Lab) << 16 | 3 << 3 | 2
        guard let toRGB = cmsCreateTransform(lab, lab16, srgb, rgb16, UInt32(INTENT_RELATIVE_COLORIMETRIC), 0)
        else { throw Failure(description: "cmsCreateTransform Lab → sRGB") }
        defer { cmsDeleteTransform(toRGB) }
        guard let pipeline = cmsPipelineAlloc(nil, 3, 4) else { throw Failure(description: "cmsPipelineAlloc") }
        guard let table = cmsStageAllocCLut16bit(nil, 17, 3, 4, nil) else {
            cmsPipelineFree(pipeline)
            throw Failure(description: "CLUT")
        }
        struct Cargo {
            var toRGB: cmsHTRANSFORM
            var lift: Double
        }
        var cargo = Cargo(toRGB: toRGB, lift: lift)
        let sampler: cmsSAMPLER16 = { input, output, cargo in
            guard let input, let output, let cargo else { return 0 }
            let settings = cargo.load(as: Cargo.self)
            var rgb: [UInt16] = [0, 0, 0]
            var lab: [UInt16] = [input[0], input[1], input[2]]
            cmsDoTransform(settings.toRGB, &lab, &rgb, 1)
            // Undo the lift, then red comes from magenta and green from cyan (the forward swap).
            let shares = rgb.map { min(max((Double($0) / 65535 - settings.lift) / (1 - settings.lift), 0), 1) }
            let brightest = shares.max() ?? 0
            let inks =
                brightest > 0
                ? [1 - shares[1] / brightest, 1 - shares[0] / brightest, 1 - shares[2] / brightest, 1 - brightest]
                : [0, 0, 0, 1]
            for channel in 0..<4 { output[channel] = UInt16((inks[channel] * 65535).rounded()) }
            return 1
        }
        guard cmsStageSampleCLut16bit(table, sampler, &cargo, 0) != 0,
            cmsPipelineInsertStage(pipeline, cmsAT_BEGIN, table) != 0
        else {
            cmsPipelineFree(pipeline)
            throw Failure(description: "cannot fill the inverse CLUT")
        }
        return pipeline
    }
}

/// Little CMS called directly, as a reference for what the library's colour path must produce.
public enum LittleCMSReference {
    /// Converts CMYK8 pixels (4 bytes each; Adobe's inverted ink when `inverted`) through `profile`
    /// to sRGB RGB8 (3 bytes each), relative colorimetric, with black-point compensation when
    /// asked: libvips's `icc_transform` without it.
    public static func cmykToSRGB(
        _ cmyk: [UInt8],
        profile: Data,
        inverted: Bool,
        blackPointCompensation: Bool
    ) throws -> [UInt8] {
        let source = profile.withUnsafeBytes { cmsOpenProfileFromMem($0.baseAddress, UInt32($0.count)) }
        guard let source else { throw CMYKTestProfile.Failure(description: "lcms cannot read the profile") }
        let srgb = cmsCreate_sRGBProfile()
        defer {
            cmsCloseProfile(source)
            cmsCloseProfile(srgb)
        }
        // TYPE_CMYK_8 (and its inverted form, FLAVOR_SH(1)) and TYPE_RGB_8: macros Swift does not import.
        let cmyk8 = UInt32(PT_CMYK) << 16 | 4 << 3 | 1 | (inverted ? 1 << 13 : 0)
        let rgb8 = UInt32(PT_RGB) << 16 | 3 << 3 | 1
        let flags = UInt32(blackPointCompensation ? cmsFLAGS_BLACKPOINTCOMPENSATION : 0)
        guard let transform = cmsCreateTransform(source, cmyk8, srgb, rgb8, UInt32(INTENT_RELATIVE_COLORIMETRIC), flags)
        else { throw CMYKTestProfile.Failure(description: "lcms cannot build the CMYK → sRGB transform") }
        defer { cmsDeleteTransform(transform) }
        var rgb = [UInt8](repeating: 0, count: cmyk.count / 4 * 3)
        cmsDoTransform(transform, cmyk, &rgb, UInt32(cmyk.count / 4))
        return rgb
    }

    /// The mean CIE76 ΔE between two lists of sRGB RGB8 colours (3 bytes each), through Lab (D50).
    public static func meanDeltaE(_ a: [UInt8], _ b: [UInt8]) throws -> Double {
        let srgb = cmsCreate_sRGBProfile()
        let lab = cmsCreateLab4Profile(nil)
        defer {
            cmsCloseProfile(srgb)
            cmsCloseProfile(lab)
        }
        let rgb8 = UInt32(PT_RGB) << 16 | 3 << 3 | 1
        let labDouble = UInt32(PT_Lab) << 16 | 3 << 3 | 0 | 1 << 22  // TYPE_Lab_DBL
        guard let toLab = cmsCreateTransform(srgb, rgb8, lab, labDouble, UInt32(INTENT_RELATIVE_COLORIMETRIC), 0)
        else { throw CMYKTestProfile.Failure(description: "lcms cannot build sRGB → Lab") }
        defer { cmsDeleteTransform(toLab) }
        let count = min(a.count, b.count) / 3
        guard count > 0 else { return 0 }
        var labA = [cmsCIELab](repeating: cmsCIELab(), count: count)
        var labB = labA
        cmsDoTransform(toLab, a, &labA, UInt32(count))
        cmsDoTransform(toLab, b, &labB, UInt32(count))
        var total = 0.0
        for index in 0..<count { total += cmsDeltaE(&labA[index], &labB[index]) }
        return total / Double(count)
    }
}
