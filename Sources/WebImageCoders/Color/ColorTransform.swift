import CWebImageShims
import Foundation
import Synchronization

/// A transform from one profile to sRGB RGBA8, built once per distinct profile, pixel layout and
/// options and reused (building one costs milliseconds). Matrix-shaper RGB and gray profiles
/// convert through tables (`wi_color_transform_path`), the rest through Little CMS.
final class ColorTransform: Sendable {
    /// The C transform. Safe to share: its tables are immutable once built, and its lcms
    /// transform (if any) is created with `cmsFLAGS_NOCACHE`, so `cmsDoTransform` keeps no state in
    /// it and may run on several threads at once; the pointer never changes after `init` and is
    /// freed in `deinit`, when no thread can hold this object.
    nonisolated(unsafe) private let transform: OpaquePointer

    private init(_ transform: OpaquePointer) { self.transform = transform }

    deinit { wi_color_transform_destroy(transform) }

    /// The path this transform converts through.
    var path: wi_color_path { wi_color_transform_path(transform) }

    /// Converts `bitmap`'s pixels in place.
    func apply(to bitmap: inout Bitmap) {
        let count = bitmap.width * bitmap.height
        bitmap.pixels.withUnsafeMutableBufferPointer { pixels in
            wi_color_transform_apply(transform, pixels.baseAddress, count)
        }
    }

    /// Converts `count` pixels (4 bytes each) at `pixels` in place.
    func apply(to pixels: UnsafeMutableRawBufferPointer, count: Int) {
        wi_color_transform_apply(transform, pixels.baseAddress?.assumingMemoryBound(to: UInt8.self), count)
    }

    /// The transform `policy` asks for on RGBA pixels (or gray ones in the first byte, or CMYK
    /// ones stored as `cmykLayout` says) tagged with `profile`; `nil` when there is nothing to
    /// convert: a policy that keeps or ignores the profile, an sRGB profile, a CMYK one without a
    /// `cmykLayout`, or one lcms cannot use.
    static func toSRGB(
        from profile: ColorProfile,
        policy: ColorPolicy,
        cmykLayout: wi_pixel_layout? = nil
    ) -> ColorTransform? {
        guard policy.convertsToSRGB, !profile.isSRGB else { return nil }
        let layout: wi_pixel_layout?
        switch profile.colorSpace {
        case .rgb: layout = WI_PIXELS_RGBA
        case .gray: layout = WI_PIXELS_GRAY_IN_RGBA
        case .cmyk: layout = cmykLayout
        case .other: layout = nil
        }
        return layout.flatMap { toSRGB(from: profile, layout: $0, options: policy.transformOptions) }
    }

    /// Calls `body` with the C transform, kept alive meanwhile.
    func withCTransform<Result, Failure: Error>(
        _ body: (OpaquePointer) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try withExtendedLifetime(self) { () throws(Failure) -> Result in try body(transform) }
    }

    private struct Key: Hashable {
        /// The profile's bytes as an array: `Data` keeps its storage behind an enum whose tag
        /// bits hide the pointer from LeakSanitizer, which then reports a process-long cache as a
        /// leak (the fuzz targets run with it).
        var profile: [UInt8]
        var layout: UInt32
        var options: UInt32
    }

    /// The transforms built so far (a few distinct profiles in practice; emptied past 32).
    private static let cache = Mutex<[Key: ColorTransform]>([:])

    /// The transform for `profile` read in `layout`, from the cache or built now; `nil` when lcms
    /// cannot build one (an unreadable profile, or one that does not fit the pixels).
    static func toSRGB(
        from profile: ColorProfile,
        layout: wi_pixel_layout,
        options: wi_color_options = WI_COLOR_DEFAULT
    ) -> ColorTransform? {
        let key = Key(profile: [UInt8](profile.data), layout: layout.rawValue, options: options.rawValue)
        if let cached = cache.withLock({ $0[key] }) { return cached }
        var message = [CChar](repeating: 0, count: Int(WI_MESSAGE_CAPACITY))
        let built = profile.data.withUnsafeBytes { bytes in
            wi_color_transform_create(
                bytes.baseAddress?.assumingMemoryBound(to: UInt8.self),
                bytes.count,
                layout,
                options,
                &message
            )
        }
        guard let built else { return nil }
        let transform = ColorTransform(built)
        return cache.withLock { cache in
            if cache.count >= 32 { cache.removeAll() }
            if let raced = cache[key] { return raced }
            cache[key] = transform
            return transform
        }
    }
}

extension DecodedImage {
    /// Applies `policy` to the embedded profile: converts every frame to sRGB, keeps the profile,
    /// or drops it. A profile that needs no transform (sRGB) or that lcms cannot use is dropped
    /// and the pixels stay as decoded.
    func applyingColorPolicy(_ policy: ColorPolicy, deadline: CodingDeadline) throws(CoderError) -> DecodedImage {
        var image = self
        try image.applyColorPolicy(policy, deadline: deadline)
        return image
    }

    /// ``applyingColorPolicy(_:deadline:)`` in place: when this value holds the only reference to
    /// its pixels (a decoder's fresh image), they are converted without a copy.
    mutating func applyColorPolicy(_ policy: ColorPolicy, deadline: CodingDeadline) throws(CoderError) {
        guard let profile = colorProfile, policy != .keep else { return }
        colorProfile = nil
        guard let transform = ColorTransform.toSRGB(from: profile, policy: policy) else { return }
        // Take the frames out (a 1×1 stand-in meanwhile), so the array and its bitmaps are
        // uniquely referenced here and converted in place.
        var converted = frames
        frames = [Frame(bitmap: Bitmap(width: 1, height: 1))]
        defer { frames = converted }
        for index in converted.indices {
            try deadline.check(format)
            transform.apply(to: &converted[index].bitmap)
        }
    }
}

extension DecodedImage {
    /// The image ready for an encoder that can embed profiles of `space` only (`nil`: none): as it
    /// is when its profile fits (or it has none), else converted to sRGB and untagged, so the
    /// numbers written never claim a space they are not in.
    func withProfileFitting(_ space: ColorProfile.ColorSpace?) throws(CoderError) -> DecodedImage {
        guard let profile = colorProfile, profile.colorSpace != space else { return self }
        return try applyingColorPolicy(.convertToSRGB, deadline: CodingDeadline(ImageDecodingOptions()))
    }
}

extension ColorPolicy {
    /// How this policy's transforms are built.
    var transformOptions: wi_color_options {
        self == .convertToSRGBWithBlackPointCompensation ? WI_COLOR_BLACK_POINT_COMPENSATION : WI_COLOR_DEFAULT
    }
}
