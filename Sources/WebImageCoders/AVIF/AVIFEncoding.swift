import CAVIF
import CWebImageShims
import Foundation

/// Writes AVIF with libavif: 8-bit 4:2:0 for opaque images, 4:4:4 with an alpha plane for
/// translucent ones; a still image, or an image sequence with each frame's duration (in
/// milliseconds) when the image has several frames and `firstFrameOnly` is off.
struct AVIFEncoding {
    let speed: Int
    let codec: AVIFEncoderChoice
    let options: ImageEncodingOptions

    /// libavif 0.11's quantizer (0 best … 63 worst) for a quality from 0 to 1.
    static func quantizer(forQuality quality: Double) -> Int32 { Int32((1 - min(max(quality, 0), 1)) * 63) }

    var quantizer: Int32 { Self.quantizer(forQuality: options.quality) }

    func encode(_ image: DecodedImage) throws(CoderError) -> Data {
        let deadline = CodingDeadline(options)
        let image = try image.withProfileFitting(.rgb)
        // SVT-AV1 makes this thread real-time while it encodes (see ThreadScheduling): undone on
        // every path, after the encoder and its threads are gone.
        let scheduling = ThreadScheduling()
        defer { scheduling.restore() }
        let encoder = try makeEncoder()
        defer { avifEncoderDestroy(encoder) }
        let frames = options.firstFrameOnly ? [image.frames[0]] : image.frames
        let hasAlpha = frames.contains { $0.bitmap.hasAlpha && $0.bitmap.containsTransparency }
        for frame in frames {
            try deadline.check(.avif, "encoding")
            let planes = try Self.image(from: frame.bitmap, withAlpha: hasAlpha)
            defer { avifImageDestroy(planes) }
            if let profile = image.colorProfile {
                profile.data.withUnsafeBytes { bytes in
                    avifImageSetProfileICC(planes, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count)
                }
            }
            if image.exif != nil {
                let exif = EXIFWriter.block(for: image)
                avifImageSetMetadataExif(planes, exif, exif.count)
            }
            let flags = frames.count == 1 ? AVIF_ADD_IMAGE_FLAG_SINGLE.rawValue : AVIF_ADD_IMAGE_FLAG_NONE.rawValue
            let milliseconds = UInt64(max(1, (frame.duration * 1000).rounded()))
            try Self.check(avifEncoderAddImage(encoder, planes, milliseconds, flags), "cannot encode a frame")
        }
        try deadline.check(.avif, "encoding")  // libavif 0.11 cannot be stopped inside a frame
        var output = avifRWData(data: nil, size: 0)
        defer { avifRWDataFree(&output) }
        try Self.check(avifEncoderFinish(encoder, &output), "cannot finish the file")
        guard let bytes = output.data else { throw .encodingFailed(.avif, "the encoder wrote nothing") }
        return Data(bytes: bytes, count: output.size)
    }

    /// A libavif encoder at this speed, codec and quality (one thread, milliseconds as its
    /// timescale). The caller destroys it (`avifEncoderDestroy`).
    func makeEncoder() throws(CoderError) -> UnsafeMutablePointer<avifEncoder> {
        let choice = try codec.codecChoice()
        guard let encoder = avifEncoderCreate() else { throw .outOfMemory(.avif, "cannot create the encoder") }
        encoder.pointee.maxThreads = 1
        encoder.pointee.speed = Int32(speed)
        encoder.pointee.codecChoice = choice
        encoder.pointee.minQuantizer = quantizer
        encoder.pointee.maxQuantizer = quantizer
        encoder.pointee.minQuantizerAlpha = options.lossless ? 0 : quantizer
        encoder.pointee.maxQuantizerAlpha = options.lossless ? 0 : quantizer
        encoder.pointee.timescale = 1000
        return encoder
    }

    /// YUV planes (and alpha) made from an RGBA bitmap; the caller destroys them.
    static func image(
        from bitmap: Bitmap,
        withAlpha: Bool
    ) throws(CoderError) -> UnsafeMutablePointer<avifImage> {
        let format = withAlpha ? AVIF_PIXEL_FORMAT_YUV444 : AVIF_PIXEL_FORMAT_YUV420
        try WI_LIBRARY_AVIF.requireForEncoding(.avif)
        guard let image = avifImageCreate(UInt32(bitmap.width), UInt32(bitmap.height), 8, format) else {
            throw .outOfMemory(.avif, "cannot allocate a \(bitmap.width)×\(bitmap.height) image")
        }
        var rgb = avifRGBImage()
        avifRGBImageSetDefaults(&rgb, image)
        rgb.format = AVIF_RGB_FORMAT_RGBA
        rgb.depth = 8
        rgb.ignoreAlpha = withAlpha ? AVIF_FALSE : AVIF_TRUE
        rgb.rowBytes = UInt32(bitmap.bytesPerRow)
        let result = bitmap.pixels.withUnsafeBufferPointer { pixels -> avifResult in
            rgb.pixels = UnsafeMutablePointer(mutating: pixels.baseAddress)
            return avifImageRGBToYUV(image, &rgb)
        }
        do throws(CoderError) {
            try check(result, "cannot convert the pixels to YUV")
        } catch {
            avifImageDestroy(image)
            throw error
        }
        return image
    }

    static func check(_ result: avifResult, _ context: String) throws(CoderError) {
        guard result != AVIF_RESULT_OK else { return }
        throw .encodingFailed(.avif, "\(context): \(String(cString: avifResultToString(result)))")
    }
}

/// The AV1 encoder libavif uses to write AVIF. Debian 12's libavif has aom, SVT-AV1 and rav1e.
public enum AVIFEncoderChoice: String, Sendable, Hashable, CaseIterable {
    /// libavif's first available encoder (aom on Debian).
    case automatic = "auto"
    /// libaom.
    case aom
    /// SVT-AV1 (libavif's name `svt`). Version 1.4 runs its own threads real-time (`SCHED_FIFO`)
    /// when the process may (as root), ahead of every other thread while it encodes; the calling
    /// thread's scheduling is put back after each encode. Sizes it refuses (odd widths and
    /// heights) are written by aom.
    case svt
    /// rav1e.
    case rav1e

    /// Whether this libavif can encode with it.
    public var isAvailable: Bool {
        guard WI_LIBRARY_AVIF.isAvailable, let choice = try? codecChoice() else { return false }
        return avifCodecName(choice, AVIF_CODEC_FLAG_CAN_ENCODE.rawValue) != nil
    }

    /// libavif's codec choice.
    /// - Throws: ``CoderError/encodingFailed(_:_:)`` when this libavif has no such encoder.
    func codecChoice() throws(CoderError) -> avifCodecChoice {
        try WI_LIBRARY_AVIF.requireForEncoding(.avif)
        if self == .automatic { return AVIF_CODEC_CHOICE_AUTO }
        let choice = avifCodecChoiceFromName(rawValue)
        guard choice != AVIF_CODEC_CHOICE_AUTO, avifCodecName(choice, AVIF_CODEC_FLAG_CAN_ENCODE.rawValue) != nil else {
            throw .encodingFailed(.avif, "libavif has no '\(rawValue)' AV1 encoder")
        }
        return choice
    }
}
