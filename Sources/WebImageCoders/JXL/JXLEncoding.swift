import CJXL
import CWebImageShims
import Foundation

/// Writes JPEG XL with libjxl 0.7's encoder: lossy (VarDCT at the Butteraugli distance the
/// quality maps to) or lossless; RGB, or RGBA when some pixel is translucent; a still image, or
/// an animation with each frame's duration (in milliseconds) and the loop count; the image's ICC
/// profile (untagged pixels are written as sRGB). No EXIF: libjxl 0.7 writes no metadata boxes.
///
/// Buffers: libjxl copies each frame's pixels when they are added (``JXLEncoding/addFrame``
/// hands it a contiguous copy it may drop on return) and owns its output buffer until
/// `JxlEncoderProcessOutput` writes into ours. One thread (no parallel runner): the caller's
/// work queue bounds concurrency. Stops between frames only (libjxl 0.7 has no progress hook).
struct JXLEncoding {
    let effort: Int
    let options: ImageEncodingOptions

    /// The Butteraugli distance for a quality from 0 to 1, as `cjxl -q` maps it (libjxl's
    /// `JxlEncoderDistanceFromQuality` from 0.9 on): 0.9 → 1.0 (visually lossless), 0.77 → 2.17,
    /// 0.3 → 6.4; 1 is lossless (distance 0).
    static func distance(forQuality quality: Double) -> Float {
        let quality = min(max(quality, 0), 1) * 100
        if quality >= 100 { return 0 }
        if quality >= 30 { return Float(0.1 + (100 - quality) * 0.09) }
        return Float(53.0 / 3000.0 * quality * quality - 23.0 / 20.0 * quality + 25)
    }

    /// Whether the pixels go in without loss: asked for, or a quality of 1.
    var isLossless: Bool { options.lossless || options.quality >= 1 }

    func encode(_ image: DecodedImage) throws(CoderError) -> Data {
        let deadline = CodingDeadline(options)
        try deadline.check(.jxl, "encoding")
        let frames = options.firstFrameOnly ? [image.frames[0]] : image.frames
        let hasAlpha = frames.contains { $0.bitmap.hasAlpha && $0.bitmap.containsTransparency }
        try WI_LIBRARY_JXL.requireForEncoding(.jxl)
        guard let encoder = JxlEncoderCreate(nil) else { throw .outOfMemory(.jxl, "cannot create the encoder") }
        defer { JxlEncoderDestroy(encoder) }
        try describe(image, frameCount: frames.count, hasAlpha: hasAlpha, to: encoder)
        guard let settings = JxlEncoderFrameSettingsCreate(encoder, nil) else {
            throw .outOfMemory(.jxl, "cannot create the frame settings")
        }
        try Self.check(
            JxlEncoderFrameSettingsSetOption(settings, JXL_ENC_FRAME_SETTING_EFFORT, Int64(effort)),
            encoder,
            "cannot set effort \(effort)"
        )
        if isLossless {
            try Self.check(JxlEncoderSetFrameLossless(settings, JXL_TRUE), encoder, "cannot encode losslessly")
        } else {
            let distance = Self.distance(forQuality: options.quality)
            try Self.check(JxlEncoderSetFrameDistance(settings, distance), encoder, "cannot set distance \(distance)")
        }
        var output = Output()
        for (index, frame) in frames.enumerated() {
            try deadline.check(.jxl, "encoding")
            try addFrame(frame, animated: frames.count > 1, hasAlpha: hasAlpha, settings: settings, encoder: encoder)
            // The last frame must be known as last before it is encoded; each earlier one is
            // encoded now, so libjxl drops its copy of the pixels before the next comes.
            if index == frames.count - 1 { JxlEncoderCloseInput(encoder) }
            try output.drain(encoder)
        }
        return output.data.prefix(output.written)
    }

    /// The basic info and colour encoding.
    private func describe(
        _ image: DecodedImage,
        frameCount: Int,
        hasAlpha: Bool,
        to encoder: OpaquePointer
    ) throws(CoderError) {
        var info = JxlBasicInfo()
        JxlEncoderInitBasicInfo(&info)
        info.xsize = UInt32(image.bitmap.width)
        info.ysize = UInt32(image.bitmap.height)
        info.bits_per_sample = 8
        info.num_color_channels = 3
        // Lossless keeps the pixels' own space; lossy works in XYB, which libjxl converts back.
        info.uses_original_profile = isLossless ? JXL_TRUE : JXL_FALSE
        if hasAlpha {
            info.alpha_bits = 8
            info.num_extra_channels = 1
        }
        if frameCount > 1 {
            info.have_animation = JXL_TRUE
            info.animation.tps_numerator = 1000
            info.animation.tps_denominator = 1
            info.animation.num_loops = UInt32(clamping: max(0, image.loopCount))
        }
        try Self.check(JxlEncoderSetBasicInfo(encoder, &info), encoder, "cannot set the image header")
        if let profile = image.colorProfile {
            let accepted = profile.data.withUnsafeBytes { bytes in
                JxlEncoderSetICCProfile(encoder, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count)
            }
            try Self.check(accepted, encoder, "libjxl refuses the colour profile")
        } else {
            var color = JxlColorEncoding()
            JxlColorEncodingSetToSRGB(&color, JXL_FALSE)
            try Self.check(JxlEncoderSetColorEncoding(encoder, &color), encoder, "cannot set sRGB")
        }
    }

    /// Hands one frame's pixels to libjxl (RGB or RGBA bytes, rows packed).
    private func addFrame(
        _ frame: DecodedImage.Frame,
        animated: Bool,
        hasAlpha: Bool,
        settings: OpaquePointer,
        encoder: OpaquePointer
    ) throws(CoderError) {
        if animated {
            var header = JxlFrameHeader()
            JxlEncoderInitFrameHeader(&header)
            header.duration = UInt32(max(1, (frame.duration * 1000).rounded()))
            try Self.check(JxlEncoderSetFrameHeader(settings, &header), encoder, "cannot set a frame's duration")
        }
        let channels = hasAlpha ? 4 : 3
        var format = JxlPixelFormat(
            num_channels: UInt32(channels),
            data_type: JXL_TYPE_UINT8,
            endianness: JXL_NATIVE_ENDIAN,
            align: 0
        )
        let pixels = Self.packed(frame.bitmap, channels: channels)
        let added = pixels.withUnsafeBytes { bytes in
            JxlEncoderAddImageFrame(settings, &format, bytes.baseAddress, bytes.count)
        }
        try Self.check(added, encoder, "cannot encode a \(frame.bitmap.width)×\(frame.bitmap.height) frame")
    }

    /// The bitmap's rows without padding, with alpha (4 channels) or without (3).
    static func packed(_ bitmap: Bitmap, channels: Int) -> [UInt8] {
        let rowBytes = bitmap.width * channels
        if channels == 4, bitmap.bytesPerRow == rowBytes, bitmap.pixels.count == rowBytes * bitmap.height {
            return bitmap.pixels
        }
        var packed = [UInt8](repeating: 0, count: rowBytes * bitmap.height)
        bitmap.pixels.withUnsafeBufferPointer { source in
            packed.withUnsafeMutableBufferPointer { target in
                for y in 0..<bitmap.height {
                    let from = y * bitmap.bytesPerRow
                    let to = y * rowBytes
                    for x in 0..<bitmap.width {
                        for channel in 0..<channels {
                            target[to + x * channels + channel] = source[from + x * 4 + channel]
                        }
                    }
                }
            }
        }
        return packed
    }

    /// What the encoder has written so far, in a buffer that doubles as it fills.
    private struct Output {
        var data = Data(count: 1 << 16)
        var written = 0

        /// Takes everything the encoder can write now.
        mutating func drain(_ encoder: OpaquePointer) throws(CoderError) {
            while true {
                let status = data.withUnsafeMutableBytes { buffer -> JxlEncoderStatus in
                    let start = buffer.baseAddress!.assumingMemoryBound(to: UInt8.self)
                    var next: UnsafeMutablePointer<UInt8>? = start + written
                    var available = buffer.count - written
                    let status = JxlEncoderProcessOutput(encoder, &next, &available)
                    written = buffer.count - available
                    return status
                }
                switch status {
                case JXL_ENC_SUCCESS: return
                case JXL_ENC_NEED_MORE_OUTPUT: data.count *= 2
                default: try JXLEncoding.check(status, encoder, "cannot write the file")
                }
            }
        }
    }

    private static func check(
        _ status: JxlEncoderStatus,
        _ encoder: OpaquePointer,
        _ context: String
    ) throws(CoderError) {
        guard status != JXL_ENC_SUCCESS else { return }
        let error = JxlEncoderGetError(encoder)
        let reason =
            switch error {
            case JXL_ENC_ERR_OOM: "out of memory"
            case JXL_ENC_ERR_NOT_SUPPORTED: "not supported"
            case JXL_ENC_ERR_BAD_INPUT: "bad input"
            case JXL_ENC_ERR_API_USAGE: "API misuse"
            case JXL_ENC_ERR_JBRD: "JPEG reconstruction data"
            default: "error \(error.rawValue)"
            }
        if error == JXL_ENC_ERR_OOM { throw .outOfMemory(.jxl, "\(context): \(reason)") }
        throw .encodingFailed(.jxl, "\(context) (libjxl: \(reason))")
    }
}
