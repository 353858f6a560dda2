import CAVIF
import CWebImageShims
import Foundation

/// AVIF through libavif (dav1d to decode, aom to encode with Debian's build): still images and
/// image sequences (frame durations; libavif 0.11 does not read the loop count, so sequences
/// loop forever, as browsers play them), alpha, 10- and 12-bit images to 8-bit RGBA, and the
/// `irot`/`imir` transforms as the image's orientation. Thumbnails decode the full image, then
/// resize (AVIF stores no smaller representation libavif exposes). No progressive previews:
/// the final image only. libavif 0.11 (Debian 12) marks its incremental decoding experimental,
/// and it only shows the finished rows of grid images; layered (progressive) AVIF needs
/// libavif 1.0's encoder to exist at all.
/// Encodes still and animated images (quality, speed). Stateless and thread-safe.
public struct AVIFCoder: ImageCoding {
    /// The encoder's speed, 0 (slowest, smallest) to 10 (fastest). Default 6, the knee of libaom's
    /// curve: at equal SSIMULACRA2 about 10 % fewer bytes than speed 8 for about 3× its time
    /// (speed 5: 16 % for 11×; the README has the table).
    public var speed: Int
    /// The AV1 encoder libavif calls. Default ``AVIFEncoderChoice/automatic``.
    public var encoder: AVIFEncoderChoice

    public init(speed: Int = 6, encoder: AVIFEncoderChoice = .automatic) {
        self.speed = min(max(speed, 0), 10)
        self.encoder = encoder
    }

    public func canDecode(_ details: ImageFormatDetails) -> Bool { details.format == .avif }

    public func canEncode(_ format: ImageFormat) -> Bool { format == .avif }

    public func decode(_ data: Data, options: ImageDecodingOptions) throws(CoderError) -> DecodedImage {
        guard !data.isEmpty else { throw .emptyData }
        if options.prefersEmbeddedThumbnail, let thumbnail = AVIFThumbnail.file(from: data) {
            var whole = options
            whole.prefersEmbeddedThumbnail = false
            do {
                return try decode(thumbnail, options: whole)
            } catch let error where error.code == "corruptData" || error.code == "truncatedData" {
                // A thumbnail libavif cannot read: the image itself, as when there is none.
            }
        }
        // A sequence's frames on demand, or delivered smaller than its canvas: one at a time.
        if let reduced = try AnimatedImage.decodeFrameByFrame(data, options: options) { return reduced }
        let deadline = CodingDeadline(options)
        let decoded = data.withUnsafeBytes { bytes in
            Result { () throws(CoderError) -> DecodedImage in try decode(bytes, options: options, deadline: deadline) }
        }
        return try decoded.get()
    }

    private func decode(
        _ bytes: UnsafeRawBufferPointer,
        options: ImageDecodingOptions,
        deadline: CodingDeadline
    ) throws(CoderError) -> DecodedImage {
        let decoder = try Self.makeDecoder()
        defer { avifDecoderDestroy(decoder) }
        try Self.check(
            avifDecoderSetIOMemory(decoder, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count),
            "cannot read the data"
        )
        try Self.check(avifDecoderParse(decoder), "cannot read the AVIF header")
        let image = decoder.pointee.image.pointee
        let source = PixelSize(width: Int(image.width), height: Int(image.height))
        try options.checkPixelLimit(source, format: .avif)
        let frameCount = Int(decoder.pointee.imageCount)
        let decodedFrames = options.firstFrameOnly ? 1 : frameCount
        try options.checkAnimationLimits(frameCount: decodedFrames, canvas: source, format: .avif)
        let orientation = Self.orientation(image)
        let hasAlpha = decoder.pointee.alphaPresent == AVIF_TRUE
        var frames: [DecodedImage.Frame] = []
        frames.reserveCapacity(decodedFrames)
        while frames.count < decodedFrames {
            try deadline.check(.avif)
            try Self.check(avifDecoderNextImage(decoder), "cannot decode frame \(frames.count + 1)")
            let bitmap = try Self.rgba(decoder.pointee.image, size: source, hasAlpha: hasAlpha)
            let duration = frameCount > 1 ? decoder.pointee.imageTiming.duration : 0
            frames.append(DecodedImage.Frame(bitmap: bitmap, duration: duration))
        }
        return try DecodedImage(
            frames: frames,
            loopCount: frameCount > 1 ? 0 : 1,
            format: .avif,
            orientation: orientation,
            sourceSize: source,
            sourceFrameCount: frameCount,
            colorProfile: options.colorPolicy == .ignore ? nil : Self.colorProfile(image)
        ).finished(with: options, deadline: deadline)
    }

    /// A libavif decoder as every decode here uses it: one thread (the caller's work queue bounds
    /// concurrency), EXIF and XMP skipped, lenient about what other writers get wrong. The
    /// caller destroys it (`avifDecoderDestroy`).
    static func makeDecoder() throws(CoderError) -> UnsafeMutablePointer<avifDecoder> {
        try WI_LIBRARY_AVIF.requireForDecoding(.avif)
        guard let decoder = avifDecoderCreate() else { throw .outOfMemory(.avif, "cannot create the decoder") }
        decoder.pointee.maxThreads = 1
        decoder.pointee.ignoreExif = AVIF_TRUE
        decoder.pointee.ignoreXMP = AVIF_TRUE
        decoder.pointee.strictFlags = AVIF_STRICT_DISABLED.rawValue
        return decoder
    }

    /// The image's ICC profile, or the profile its `nclx` code points describe; `nil` for sRGB.
    static func colorProfile(_ image: avifImage) -> ColorProfile? {
        if image.icc.size > 0, let bytes = image.icc.data {
            return ColorProfile(iccData: Data(bytes: bytes, count: image.icc.size))
        }
        return ColorProfile.fromCICP(
            primaries: UInt16(image.colorPrimaries),
            transfer: UInt16(image.transferCharacteristics)
        )
    }

    /// The container's declared size and frame count, from libavif's parse (no AV1 decoding,
    /// no pixel memory); `nil` when it cannot be parsed.
    static func header(_ bytes: UnsafeRawBufferPointer) -> ImageHeader? {
        guard let decoder = try? makeDecoder() else { return nil }
        defer { avifDecoderDestroy(decoder) }
        let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self)
        guard avifDecoderSetIOMemory(decoder, base, bytes.count) == AVIF_RESULT_OK,
            avifDecoderParse(decoder) == AVIF_RESULT_OK
        else { return nil }
        let image = decoder.pointee.image.pointee
        return ImageHeader(
            format: .avif,
            size: PixelSize(width: Int(image.width), height: Int(image.height)),
            frameCount: Int(decoder.pointee.imageCount)
        )
    }

    /// The decoder's current image as 8-bit RGBA (libavif converts any depth and subsampling).
    static func rgba(
        _ image: UnsafeMutablePointer<avifImage>,
        size: PixelSize,
        hasAlpha: Bool
    ) throws(CoderError) -> Bitmap {
        guard Int(image.pointee.width) == size.width, Int(image.pointee.height) == size.height else {
            throw .corruptData(.avif, "a frame of \(image.pointee.width)×\(image.pointee.height) in a \(size) sequence")
        }
        return try Bitmap(width: size.width, height: size.height, hasAlpha: hasAlpha) {
            (buffer) throws(CoderError) in
            var rgb = avifRGBImage()
            avifRGBImageSetDefaults(&rgb, image)
            rgb.format = AVIF_RGB_FORMAT_RGBA
            rgb.depth = 8
            rgb.pixels = buffer.baseAddress
            rgb.rowBytes = UInt32(size.width * 4)
            try check(avifImageYUVToRGB(image, &rgb), "cannot convert the pixels to RGB")
        }
    }

    /// `irot` (anticlockwise quarter turns) then `imir` (0: top and bottom exchanged, 1: left
    /// and right), as the EXIF orientation that shows the image the same way.
    static func orientation(_ image: avifImage) -> ImageOrientation {
        let flags = image.transformFlags
        let turns = flags & AVIF_TRANSFORM_IROT.rawValue != 0 ? Int(image.irot.angle & 3) : 0
        let mirror: Int? = flags & AVIF_TRANSFORM_IMIR.rawValue != 0 ? Int(image.imir.mode & 1) : nil
        // Rows: quarter turns anticlockwise; columns: no mirror, left-right, top-bottom.
        let table: [[ImageOrientation]] = [
            [.up, .upMirrored, .downMirrored],
            [.left, .rightMirrored, .leftMirrored],
            [.down, .downMirrored, .upMirrored],
            [.right, .leftMirrored, .rightMirrored],
        ]
        let column = mirror.map { $0 == 1 ? 1 : 2 } ?? 0
        return table[turns][column]
    }

    static func check(_ result: avifResult, _ context: String) throws(CoderError) {
        guard result != AVIF_RESULT_OK else { return }
        let reason = String(cString: avifResultToString(result))
        switch result {
        case AVIF_RESULT_TRUNCATED_DATA: throw .truncatedData(.avif, "\(context): \(reason)")
        case AVIF_RESULT_OUT_OF_MEMORY: throw .outOfMemory(.avif, "\(context): \(reason)")
        case AVIF_RESULT_NO_CODEC_AVAILABLE:
            throw .corruptData(.avif, "\(context): libavif has no AV1 codec for this (\(reason))")
        default: throw .corruptData(.avif, "\(context): \(reason)")
        }
    }

    public func encode(
        _ image: DecodedImage,
        as format: ImageFormat,
        options: ImageEncodingOptions
    ) throws(CoderError) -> Data {
        guard format == .avif else { throw .encodingFailed(format, "the AVIF coder writes only AVIF") }
        let speed = options.avifSpeed.map { min(max($0, 0), 10) } ?? speed
        let codec = options.avifEncoder ?? encoder
        do {
            return try AVIFEncoding(speed: speed, codec: codec, options: options).encode(image)
        } catch let error where codec == .svt && error.code == "encodingFailed" && AVIFEncoderChoice.aom.isAvailable {
            // SVT-AV1 1.4 refuses some sizes libavif 0.11 hands it (odd widths and heights): aom
            // writes those.
            return try AVIFEncoding(speed: speed, codec: .aom, options: options).encode(image)
        }
    }
}
