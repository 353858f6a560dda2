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

    /// The profile's bytes (ICC v2, output class, Lab PCS, a 9-point CLUT).
    public static func make() throws -> Data {
        let srgb = cmsCreate_sRGBProfile()
        let lab = cmsCreateLab2Profile(nil)
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
        let sampler: cmsSAMPLER16 = { input, output, cargo in
            guard let input, let output, let cargo else { return 0 }
            func share(_ ink: UInt16) -> Double { 1 - Double(ink) / 65535 }
            let black = share(input[3])
            var rgb: [UInt16] = [share(input[1]), share(input[0]), share(input[2])].map {
                UInt16(($0 * black * 65535).rounded())
            }
            cmsDoTransform(cargo, &rgb, output, 1)
            return 1
        }
        guard cmsStageSampleCLut16bit(table, sampler, toLab, 0) != 0,
            cmsPipelineInsertStage(pipeline, cmsAT_BEGIN, table) != 0
        else { throw Failure(description: "cannot fill the CLUT") }
        guard cmsWriteTag(profile, cmsSigAToB0Tag, UnsafeRawPointer(pipeline)) != 0 else {
            throw Failure(description: "cmsWriteTag A2B0")
        }
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
