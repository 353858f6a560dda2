import CJXL
import Foundation
import WebImageCoders

/// Writes JPEG XL files with libjxl's encoder, for tests and fuzz seeds: still or animated
/// (every frame a full canvas with its duration), alpha, and the codestream orientation.
public enum JXLTestEncoder {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// The bitmap's samples as RGB or RGBA bytes, row after row.
    private static func interleaved(_ frame: Bitmap, withAlpha: Bool) -> [UInt8] {
        var pixels = [UInt8]()
        pixels.reserveCapacity(frame.width * frame.height * (withAlpha ? 4 : 3))
        for y in 0..<frame.height {
            for x in 0..<frame.width {
                let pixel = frame[x, y]
                pixels += withAlpha ? [pixel.r, pixel.g, pixel.b, pixel.a] : [pixel.r, pixel.g, pixel.b]
            }
        }
        return pixels
    }

    /// `frames` (one for a still image) of equal size; durations in milliseconds (ticks of
    /// 1/1000 s); `loopCount` 0 loops forever. Lossless unless `distance` is given (1.0 is
    /// visually lossless). The pixels are sRGB, or in `iccProfile`'s space when it is given.
    public static func encode(
        _ frames: [Bitmap],
        iccProfile: Data? = nil,
        durations: [Int] = [],
        loopCount: Int = 0,
        orientation: ImageOrientation = .up,
        distance: Float? = nil
    ) throws -> Data {
        guard let first = frames.first else { throw Failure(description: "no frames") }
        guard let encoder = JxlEncoderCreate(nil) else { throw Failure(description: "JxlEncoderCreate") }
        defer { JxlEncoderDestroy(encoder) }
        let hasAlpha = frames.contains { $0.hasAlpha }
        var info = JxlBasicInfo()
        JxlEncoderInitBasicInfo(&info)
        info.xsize = UInt32(first.width)
        info.ysize = UInt32(first.height)
        info.bits_per_sample = 8
        info.num_color_channels = 3
        info.uses_original_profile = distance == nil ? JXL_TRUE : JXL_FALSE
        info.orientation = JxlOrientation(rawValue: UInt32(orientation.rawValue))
        if hasAlpha {
            info.alpha_bits = 8
            info.num_extra_channels = 1
        }
        if frames.count > 1 {
            info.have_animation = JXL_TRUE
            info.animation.tps_numerator = 1000
            info.animation.tps_denominator = 1
            info.animation.num_loops = UInt32(loopCount)
        }
        try check(JxlEncoderSetBasicInfo(encoder, &info), "JxlEncoderSetBasicInfo")
        if let iccProfile {
            let bytes = [UInt8](iccProfile)
            try check(JxlEncoderSetICCProfile(encoder, bytes, bytes.count), "JxlEncoderSetICCProfile")
        } else {
            var color = JxlColorEncoding()
            JxlColorEncodingSetToSRGB(&color, JXL_FALSE)
            try check(JxlEncoderSetColorEncoding(encoder, &color), "JxlEncoderSetColorEncoding")
        }
        guard let settings = JxlEncoderFrameSettingsCreate(encoder, nil) else {
            throw Failure(description: "JxlEncoderFrameSettingsCreate")
        }
        if let distance {
            try check(JxlEncoderSetFrameDistance(settings, distance), "JxlEncoderSetFrameDistance")
        } else {
            try check(JxlEncoderSetFrameLossless(settings, JXL_TRUE), "JxlEncoderSetFrameLossless")
        }
        let channels = hasAlpha ? 4 : 3
        var format = JxlPixelFormat(
            num_channels: UInt32(channels),
            data_type: JXL_TYPE_UINT8,
            endianness: JXL_NATIVE_ENDIAN,
            align: 0
        )
        for (index, frame) in frames.enumerated() {
            if frames.count > 1 {
                var header = JxlFrameHeader()
                JxlEncoderInitFrameHeader(&header)
                header.duration = UInt32(index < durations.count ? durations[index] : 100)
                try check(JxlEncoderSetFrameHeader(settings, &header), "JxlEncoderSetFrameHeader")
            }
            let pixels = interleaved(frame, withAlpha: hasAlpha)
            try check(JxlEncoderAddImageFrame(settings, &format, pixels, pixels.count), "JxlEncoderAddImageFrame")
        }
        JxlEncoderCloseInput(encoder)
        var output = [UInt8](repeating: 0, count: 1 << 16)
        var written = 0
        while true {
            var next: UnsafeMutablePointer<UInt8>? = nil
            var available = 0
            let status = output.withUnsafeMutableBufferPointer { buffer in
                next = buffer.baseAddress! + written
                available = buffer.count - written
                let status = JxlEncoderProcessOutput(encoder, &next, &available)
                written = buffer.count - available
                return status
            }
            switch status {
            case JXL_ENC_SUCCESS: return Data(output.prefix(written))
            case JXL_ENC_NEED_MORE_OUTPUT: output += [UInt8](repeating: 0, count: output.count)
            default: throw Failure(description: "JxlEncoderProcessOutput failed (\(JxlEncoderGetError(encoder)))")
            }
        }
    }

    private static func check(_ status: JxlEncoderStatus, _ call: String) throws {
        guard status == JXL_ENC_SUCCESS else { throw Failure(description: "\(call) failed") }
    }
}
