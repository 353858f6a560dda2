import CJXL
import CWebImageShims
import Foundation

/// JPEG XL through libjxl (0.7's decoding API): still images and animations (coalesced frames
/// with their durations and loop count), alpha (premultiplied alpha is undone), any bit depth
/// to 8-bit RGBA, lossy (XYB) images rendered in sRGB, and the codestream's orientation reported
/// as the image's EXIF orientation (applied as ``ImageDecodingOptions/applyOrientation`` says).
/// Thumbnails decode the full image, then resize.
///
/// Limits: the pixel limit is checked from the basic info before any pixel memory is
/// allocated, the frame and animation limits before each frame's, and the decode-time limit
/// between frames. libjxl decodes on the calling thread (no parallel runner).
///
/// Encodes still and animated images: lossy at the Butteraugli distance the quality maps to as
/// `cjxl -q` does (0.77, imgproxy's default JPEG XL quality, is distance 2.17), lossless when
/// asked or at quality 1. Stateless and thread-safe.
public struct JXLCoder: ImageCoding {
    /// The encoder's effort, 1 (fastest) to 9 (smallest). Default 4, imgproxy's
    /// `IMGPROXY_JXL_EFFORT`: a proxy encodes on the request's path.
    public var effort: Int

    public init(effort: Int = 4) { self.effort = min(max(effort, 1), 9) }

    public func canDecode(_ details: ImageFormatDetails) -> Bool { details.format == .jxl }

    public func canEncode(_ format: ImageFormat) -> Bool { format == .jxl }

    public func decode(_ data: Data, options: ImageDecodingOptions) throws(CoderError) -> DecodedImage {
        guard !data.isEmpty else { throw .emptyData }
        let deadline = CodingDeadline(options)
        let decoded = data.withUnsafeBytes { bytes in
            Result { () throws(CoderError) -> DecodedImage in
                try JXLDecoding(
                    bytes,
                    events: [JXL_DEC_BASIC_INFO, JXL_DEC_COLOR_ENCODING, JXL_DEC_FRAME, JXL_DEC_FULL_IMAGE]
                )
                .decode(options: options, deadline: deadline)
            }
        }
        return try decoded.get()
    }

    /// The size as stored (before orientation) and the frame count, from the codestream and
    /// frame headers (frames are skipped, not decoded); `nil` when libjxl cannot read them.
    static func header(_ bytes: UnsafeRawBufferPointer) -> ImageHeader? {
        try? JXLDecoding(bytes, events: [JXL_DEC_BASIC_INFO, JXL_DEC_FRAME]).header()
    }

    public func encode(
        _ image: DecodedImage,
        as format: ImageFormat,
        options: ImageEncodingOptions
    ) throws(CoderError) -> Data {
        guard format == .jxl else { throw .encodingFailed(format, "the JPEG XL coder writes only JPEG XL") }
        let effort = options.jxlEffort.map { min(max($0, 1), 9) } ?? effort
        return try JXLEncoding(effort: effort, options: options).encode(image)
    }
}

/// One libjxl decoder over bytes held by the caller (they must outlive it).
private final class JXLDecoding {
    private let decoder: OpaquePointer
    private var info = JxlBasicInfo()
    private var hasInfo = false

    init(_ bytes: UnsafeRawBufferPointer, events: [JxlDecoderStatus]) throws(CoderError) {
        try WI_LIBRARY_JXL.requireForDecoding(.jxl)
        guard let decoder = JxlDecoderCreate(nil) else { throw .outOfMemory(.jxl, "cannot create the decoder") }
        self.decoder = decoder
        let mask = events.reduce(Int32(0)) { $0 | Int32($1.rawValue) }
        guard JxlDecoderSubscribeEvents(decoder, mask) == JXL_DEC_SUCCESS,
            JxlDecoderSetKeepOrientation(decoder, JXL_TRUE) == JXL_DEC_SUCCESS,
            JxlDecoderSetUnpremultiplyAlpha(decoder, JXL_TRUE) == JXL_DEC_SUCCESS,
            JxlDecoderSetInput(decoder, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count)
                == JXL_DEC_SUCCESS
        else { throw .corruptData(.jxl, "cannot set up the decoder") }
        JxlDecoderCloseInput(decoder)
    }

    deinit { JxlDecoderDestroy(decoder) }

    private var size: PixelSize { PixelSize(width: Int(info.xsize), height: Int(info.ysize)) }

    /// The next event; a truncated stream and decoder errors become ``CoderError``s.
    private func next(_ context: @autoclosure () -> String) throws(CoderError) -> JxlDecoderStatus {
        let status = JxlDecoderProcessInput(decoder)
        switch status {
        case JXL_DEC_ERROR: throw .corruptData(.jxl, "libjxl cannot decode \(context())")
        case JXL_DEC_NEED_MORE_INPUT: throw .truncatedData(.jxl, "the data ends before \(context())")
        case JXL_DEC_BASIC_INFO:
            guard JxlDecoderGetBasicInfo(decoder, &info) == JXL_DEC_SUCCESS else {
                throw .corruptData(.jxl, "cannot read the image header")
            }
            hasInfo = true
        default: break
        }
        return status
    }

    func header() throws(CoderError) -> ImageHeader {
        var frames = 0
        while true {
            switch try next("the image header") {
            case JXL_DEC_FRAME: frames += 1
            case JXL_DEC_SUCCESS:
                guard hasInfo else { throw .corruptData(.jxl, "no image header") }
                return ImageHeader(format: .jxl, size: size, frameCount: max(1, frames))
            default: continue
            }
        }
    }

    func decode(options: ImageDecodingOptions, deadline: CodingDeadline) throws(CoderError) -> DecodedImage {
        var frames: [DecodedImage.Frame] = []
        var profile: ColorProfile?
        var frameCount = 0
        var duration: TimeInterval = 0
        // With firstFrameOnly, later frames are still walked (skipped, not decoded) to count them.
        var skipsFrame: Bool { options.firstFrameOnly && !frames.isEmpty }
        decoding: while true {
            try deadline.check(.jxl)
            switch try next(frames.isEmpty ? "the image" : "frame \(frames.count + 1)") {
            case JXL_DEC_BASIC_INFO:
                try options.checkPixelLimit(size, format: .jxl)
            case JXL_DEC_COLOR_ENCODING:
                try preferSRGB()
                if options.colorPolicy != .ignore { profile = dataProfile() }
            case JXL_DEC_FRAME:
                frameCount += 1
                guard !skipsFrame else { continue }
                var header = JxlFrameHeader()
                guard JxlDecoderGetFrameHeader(decoder, &header) == JXL_DEC_SUCCESS else {
                    throw .corruptData(.jxl, "cannot read the header of frame \(frameCount)")
                }
                duration = tickSeconds(header.duration)
            case JXL_DEC_NEED_IMAGE_OUT_BUFFER:
                if skipsFrame {
                    guard JxlDecoderSkipCurrentFrame(decoder) == JXL_DEC_SUCCESS else {
                        throw .corruptData(.jxl, "cannot skip frame \(frameCount)")
                    }
                    continue
                }
                if info.have_animation == JXL_TRUE {
                    try options.checkAnimationLimits(frameCount: frames.count + 1, canvas: size, format: .jxl)
                }
                frames.append(DecodedImage.Frame(bitmap: try decodeFrame(), duration: duration))
            case JXL_DEC_SUCCESS:
                break decoding
            default:
                continue
            }
        }
        guard !frames.isEmpty else { throw .corruptData(.jxl, "the file holds no frame") }
        let animated = info.have_animation == JXL_TRUE && frameCount > 1
        if !animated { frames[0].duration = 0 }
        return try DecodedImage(
            frames: frames,
            loopCount: animated ? Int(info.animation.num_loops) : 1,
            format: .jxl,
            orientation: ImageOrientation(rawValue: Int(info.orientation.rawValue)) ?? .up,
            sourceSize: size,
            sourceFrameCount: frameCount,
            colorProfile: profile
        ).finished(with: options, deadline: deadline)
    }

    /// The colour space of the pixels libjxl hands over: `nil` for sRGB (what XYB images are
    /// asked for), else its ICC profile (embedded, or made by libjxl from the encoded space).
    private func dataProfile() -> ColorProfile? {
        var encoding = JxlColorEncoding()
        if JxlDecoderGetColorAsEncodedProfile(decoder, nil, JXL_COLOR_PROFILE_TARGET_DATA, &encoding)
            == JXL_DEC_SUCCESS,
            encoding.white_point == JXL_WHITE_POINT_D65, encoding.transfer_function == JXL_TRANSFER_FUNCTION_SRGB,
            encoding.color_space == JXL_COLOR_SPACE_GRAY || encoding.primaries == JXL_PRIMARIES_SRGB
        {
            return nil
        }
        var size = 0
        guard JxlDecoderGetICCProfileSize(decoder, nil, JXL_COLOR_PROFILE_TARGET_DATA, &size) == JXL_DEC_SUCCESS,
            size > 0
        else { return nil }
        var bytes = [UInt8](repeating: 0, count: size)
        guard
            JxlDecoderGetColorAsICCProfile(decoder, nil, JXL_COLOR_PROFILE_TARGET_DATA, &bytes, size)
                == JXL_DEC_SUCCESS
        else { return nil }
        return ColorProfile(iccData: Data(bytes))
    }

    /// Lossy (XYB) images have no colour space of their own: ask for sRGB, not libjxl's default
    /// of linear sRGB for those with an ICC profile.
    private func preferSRGB() throws(CoderError) {
        guard info.uses_original_profile == JXL_FALSE else { return }
        var srgb = JxlColorEncoding()
        JxlColorEncodingSetToSRGB(&srgb, info.num_color_channels == 1 ? JXL_TRUE : JXL_FALSE)
        guard JxlDecoderSetPreferredColorProfile(decoder, &srgb) == JXL_DEC_SUCCESS else {
            throw .corruptData(.jxl, "cannot choose sRGB output")
        }
    }

    private func tickSeconds(_ ticks: UInt32) -> TimeInterval {
        let animation = info.animation
        guard info.have_animation == JXL_TRUE, animation.tps_numerator > 0 else { return 0 }
        return Double(ticks) * Double(animation.tps_denominator) / Double(animation.tps_numerator)
    }

    /// Gives libjxl the frame's RGBA buffer and decodes into it up to the full-image event.
    private func decodeFrame() throws(CoderError) -> Bitmap {
        let size = size
        var format = JxlPixelFormat(num_channels: 4, data_type: JXL_TYPE_UINT8, endianness: JXL_NATIVE_ENDIAN, align: 0)
        var needed = 0
        guard JxlDecoderImageOutBufferSize(decoder, &format, &needed) == JXL_DEC_SUCCESS,
            needed == size.width * size.height * 4
        else { throw .corruptData(.jxl, "libjxl asks for an output buffer that does not fit \(size)") }
        return try Bitmap(width: size.width, height: size.height, hasAlpha: info.alpha_bits > 0) {
            (buffer) throws(CoderError) in
            guard JxlDecoderSetImageOutBuffer(decoder, &format, buffer.baseAddress, buffer.count) == JXL_DEC_SUCCESS
            else { throw .corruptData(.jxl, "libjxl refuses the output buffer") }
            while true {
                switch try next("the image's pixels") {
                case JXL_DEC_FULL_IMAGE: return
                case JXL_DEC_SUCCESS: throw .truncatedData(.jxl, "the stream ends inside a frame")
                default: continue
                }
            }
        }
    }
}
