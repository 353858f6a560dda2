extension ColorProfile {
    /// The profile that ITU-T H.273's code points describe (AVIF's and HEIF's `nclx` box), made
    /// by lcms; `nil` for sRGB (BT.709 primaries with sRGB's curve, or unspecified) and for what
    /// a matrix-shaper profile cannot say (PQ and HLG, unknown code points): such pixels stay as
    /// decoded.
    package static func fromCICP(primaries: UInt16, transfer: UInt16) -> ColorProfile? {
        guard let chromaticities = cicpPrimaries(primaries), let curve = cicpTransfer(transfer) else { return nil }
        if primaries == 1 || primaries == 2, case .sRGB = curve { return nil }
        return rgb(
            red: chromaticities.red,
            green: chromaticities.green,
            blue: chromaticities.blue,
            white: chromaticities.white,
            curve: curve
        )
    }

    private typealias Chromaticities = (
        red: (Double, Double), green: (Double, Double), blue: (Double, Double), white: (Double, Double)
    )

    private static let d65 = (0.3127, 0.3290)

    /// H.273's table 2 (`ColourPrimaries`); 2 (unspecified) is read as BT.709, as browsers do.
    private static func cicpPrimaries(_ code: UInt16) -> Chromaticities? {
        switch code {
        case 1, 2: ((0.640, 0.330), (0.300, 0.600), (0.150, 0.060), d65)
        case 4: ((0.67, 0.33), (0.21, 0.71), (0.14, 0.08), (0.310, 0.316))
        case 5: ((0.64, 0.33), (0.29, 0.60), (0.15, 0.06), d65)
        case 6, 7: ((0.630, 0.340), (0.310, 0.595), (0.155, 0.070), d65)
        case 9: ((0.708, 0.292), (0.170, 0.797), (0.131, 0.046), d65)
        case 11: ((0.680, 0.320), (0.265, 0.690), (0.150, 0.060), (0.314, 0.351))
        case 12: ((0.680, 0.320), (0.265, 0.690), (0.150, 0.060), d65)
        case 22: ((0.630, 0.340), (0.295, 0.605), (0.155, 0.077), d65)
        default: nil
        }
    }

    /// H.273's table 3 (`TransferCharacteristics`); 2 (unspecified) is read as sRGB.
    private static func cicpTransfer(_ code: UInt16) -> TransferCurve? {
        switch code {
        case 1, 6, 14, 15: .bt709
        case 2, 13: .sRGB
        case 4: .gamma(2.2)
        case 5: .gamma(2.8)
        case 8: .gamma(1)
        default: nil
        }
    }
}
