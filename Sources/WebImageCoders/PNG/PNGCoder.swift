import CWebImageShims
import Foundation

/// PNG through libpng: every colour type and bit depth, Adam7 interlacing, tRNS, palettes, 16-bit
/// scaled to 8-bit (gamma left as stored); APNG animations composed frame by frame; interlaced
/// passes or rows as progressive previews. Encodes 8-bit RGBA or RGB PNG. Stateless, thread-safe.
public struct PNGCoder: ImageCoding, ProgressiveImageDecoding {
    /// zlib compression level for encoding, 0–9. Default 6.
    ///
    /// At levels 1–9 the encoder first compresses a sample of rows two ways and uses zlib's
    /// run-length strategy for pictures whose rows compress poorly when it is within 0.5 % there
    /// (at 9: no larger): photos, where deflate's string search costs several times the CPU and
    /// finds nothing. Drawings, text and flat colour keep the full search.
    public var compressionLevel: Int

    public init(compressionLevel: Int = 6) {
        self.compressionLevel = compressionLevel
    }

    public func canDecode(_ details: ImageFormatDetails) -> Bool { details.format == .png }

    public func canEncode(_ format: ImageFormat) -> Bool { format == .png }

    public func makeIncrementalDecoder(options: ImageDecodingOptions) -> any IncrementalImageDecoding {
        PNGIncrementalDecoder(options: options)
    }

    public func decode(_ data: Data, options: ImageDecodingOptions) throws(CoderError) -> DecodedImage {
        guard !data.isEmpty else { throw .emptyData }
        let deadline = CodingDeadline(options)
        let animation: APNGAnimation? = try data.withBytes { (bytes) throws(CoderError) in
            guard bytes.count >= 8, bytes.prefix(8).elementsEqual(PNGSignature.bytes) else {
                throw .corruptData(.png, "the PNG signature is wrong")
            }
            return try APNGAnimation(parsing: bytes)
        }
        if let animation {
            // Frames on demand, or delivered smaller than the canvas: decoded one at a time.
            if let reduced = try AnimatedImage.decodeFrameByFrame(data, options: options) { return reduced }
            return try APNGDecoder(animation: animation, data: data, options: options, deadline: deadline).decode()
        }
        var profile: ColorProfile?
        let bitmap = try Self.decodeStill(data, options: options, deadline: deadline, profile: &profile)
        var image = DecodedImage(frames: [.init(bitmap: bitmap)], format: .png, colorProfile: profile)
        if options.keepsMetadata { image.exif = Self.exif(in: data) }
        return try (consume image).finished(with: options, deadline: deadline)
    }

    /// The payload of the `eXIf` chunk, when there is one.
    static func exif(in data: Data) -> Data? {
        data.withUnsafeBytes { bytes in
            PNGChunkSequence(bytes: bytes).first { $0.type == "eXIf" }.map { Data(bytes[$0.payload]) }
        }
    }

    /// Decodes a complete, non-animated PNG stream into a new bitmap, within `deadline`.
    static func decodeStill(
        _ data: Data,
        options: ImageDecodingOptions,
        deadline: CodingDeadline
    ) throws(CoderError) -> Bitmap {
        var ignored: ColorProfile?
        return try decodeStill(data, options: options, deadline: deadline, profile: &ignored)
    }

    /// ``decodeStill(_:options:deadline:)`` that also reads the iCCP chunk's profile into
    /// `profile` when it fits the PNG's colour type (gray for gray PNGs, RGB for the others) and
    /// the options do not ignore profiles.
    static func decodeStill(
        _ data: Data,
        options: ImageDecodingOptions,
        deadline: CodingDeadline,
        profile: inout ColorProfile?
    ) throws(CoderError) -> Bitmap {
        // The header tells the size, so the bitmap is allocated once and libpng writes into it.
        let size = try data.withBytes { (bytes) throws(CoderError) -> PixelSize in
            guard bytes.count >= 24, PNGChunkReader.bigEndianUInt32(bytes, at: 12) == 0x4948_4452 else {
                throw .corruptData(.png, "the PNG does not start with an IHDR chunk")
            }
            return PixelSize(
                width: Int(PNGChunkReader.bigEndianUInt32(bytes, at: 16)),
                height: Int(PNGChunkReader.bigEndianUInt32(bytes, at: 20))
            )
        }
        try options.checkPixelLimit(size, format: .png)
        guard let decoder = wi_png_decoder_create(UInt64(options.maxPixelCount)) else {
            throw .outOfMemory(.png, "cannot create a PNG decoder")
        }
        defer { wi_png_decoder_destroy(decoder) }
        wi_png_decoder_set_limits(decoder, deadline.remainingNanoseconds, deadline.cancellation?.flag)
        var hasAlpha = true
        var foundProfile: ColorProfile?
        let bitmap = try Bitmap(width: size.width, height: size.height, hasAlpha: true) {
            (buffer) throws(CoderError) in
            wi_png_decoder_use_buffer(decoder, buffer.baseAddress, buffer.count)
            let status = data.withUnsafeBytes { bytes in
                wi_png_decoder_feed(decoder, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count)
            }
            try Self.check(status, decoder)
            let state = wi_png_decoder_state(decoder)
            guard state.finished != 0 else {
                throw .truncatedData(.png, state.header_ready != 0 ? "the image data ends early" : "no image data")
            }
            hasAlpha = state.has_alpha != 0
            foundProfile = Self.embeddedProfile(decoder, options: options)
        }
        profile = foundProfile
        var result = bitmap
        result.hasAlpha = hasAlpha
        return result
    }

    /// The colour space a decoder past the header declares, read as browsers read it: an `sRGB`
    /// chunk says sRGB; else the `iCCP` profile when it fits the colour type (gray for gray PNGs,
    /// RGB for the others); else `gAMA` (with `cHRM`'s primaries, or sRGB's) made into a profile.
    /// `nil` for sRGB, for untagged PNGs and when the options ignore profiles.
    static func embeddedProfile(_ decoder: OpaquePointer, options: ImageDecodingOptions) -> ColorProfile? {
        guard options.colorPolicy != .ignore else { return nil }
        let chunks = wi_png_decoder_color_chunks(decoder)
        guard chunks.has_srgb == 0 else { return nil }
        let isGray = wi_png_decoder_state(decoder).color_type & ~4 == 0  // gray, or gray + alpha
        var length = 0
        if let icc = wi_png_decoder_icc_profile(decoder, &length) {
            guard let profile = ColorProfile(iccData: Data(bytes: icc, count: length)) else { return nil }
            return profile.colorSpace == (isGray ? .gray : .rgb) ? profile : nil
        }
        return gammaProfile(chunks, isGray: isGray)
    }

    /// The profile of `gAMA` and `cHRM`; `nil` without `gAMA`, or when they say sRGB (gamma
    /// 1/2.2 with sRGB's primaries or none: what most encoders write beside untagged pixels).
    private static func gammaProfile(_ chunks: wi_png_color_chunks, isGray: Bool) -> ColorProfile? {
        guard chunks.gamma > 0 else { return nil }
        let decodingGamma = 1 / chunks.gamma
        if isGray { return abs(decodingGamma - 2.2) < 0.01 ? nil : ColorProfile.gray(gamma: decodingGamma) }
        let c = chunks.chromaticities
        let srgb = [0.64, 0.33, 0.30, 0.60, 0.15, 0.06, 0.3127, 0.3290]
        let primaries = chunks.has_chromaticities != 0 ? [c.0, c.1, c.2, c.3, c.4, c.5, c.6, c.7] : srgb
        let saysSRGB = zip(primaries, srgb).allSatisfy { abs($0 - $1) < 0.001 } && abs(decodingGamma - 2.2) < 0.01
        guard !saysSRGB, primaries.allSatisfy({ $0 > 0 && $0 < 1 }) else { return nil }
        return ColorProfile.rgb(
            red: (primaries[0], primaries[1]),
            green: (primaries[2], primaries[3]),
            blue: (primaries[4], primaries[5]),
            white: (primaries[6], primaries[7]),
            curve: .gamma(decodingGamma)
        )
    }

    static func check(_ status: wi_status, _ decoder: OpaquePointer) throws(CoderError) {
        let message = String(cString: wi_png_decoder_message(decoder))
        switch status {
        case WI_OK: return
        case WI_LIMIT_EXCEEDED: throw .limitExceeded(.png, message)
        case WI_OUT_OF_MEMORY: throw .outOfMemory(.png, message)
        default: throw .corruptData(.png, message)
        }
    }

    public func encode(
        _ image: DecodedImage,
        as format: ImageFormat,
        options: ImageEncodingOptions
    )
        throws(CoderError) -> Data
    {
        guard format == .png else { throw .encodingFailed(format, "the PNG coder writes only PNG") }
        // PNGs are written RGB(A): only an RGB profile can be embedded.
        let image = try image.withProfileFitting(.rgb)
        // One colour type for every frame of an animation: with alpha when any frame has it.
        let hasAlpha = image.frames.contains { $0.bitmap.hasAlpha }
        let deadline = CodingDeadline(options)
        let metadata = Metadata(
            profile: image.colorProfile,
            exif: image.exif == nil ? [] : EXIFWriter.block(for: image)
        )
        if image.frames.count > 1 {
            return try APNGEncoder.encode(image) { (bitmap, isFirst) throws(CoderError) in
                try encodeStill(bitmap, hasAlpha: hasAlpha, deadline: deadline, metadata: isFirst ? metadata : nil)
            }
        }
        var still = metadata
        still.interlaced = options.progressive
        return try encodeStill(image.bitmap, hasAlpha: image.bitmap.hasAlpha, deadline: deadline, metadata: still)
    }

    /// An APNG writer for frames added one at a time (``AnimationEncoder``): the first frame's
    /// alpha flag decides every frame's colour type; no profile or EXIF is written.
    func animationWriter(
        size: PixelSize,
        frameCount: Int,
        loopCount: Int,
        options: ImageEncodingOptions
    ) -> APNGEncoder {
        let deadline = CodingDeadline(options)
        var withAlpha: Bool?
        return APNGEncoder(size: size, frameCount: frameCount, loopCount: loopCount) {
            (bitmap, _) throws(CoderError) -> Data in
            let alpha = withAlpha ?? bitmap.hasAlpha
            withAlpha = alpha
            return try encodeStill(bitmap, hasAlpha: alpha, deadline: deadline, metadata: nil)
        }
    }

    /// What a PNG says beside its pixels: the iCCP profile and the eXIf block, and whether its
    /// rows are Adam7-interlaced (``ImageEncodingOptions/progressive``; still images only).
    private struct Metadata {
        var profile: ColorProfile?
        var exif: [UInt8]
        var interlaced = false
    }

    /// One picture, stopped between rows by the encode's deadline or cancellation, with
    /// `metadata`'s chunks.
    private func encodeStill(
        _ bitmap: Bitmap,
        hasAlpha: Bool,
        deadline: CodingDeadline,
        metadata: Metadata?
    ) throws(CoderError) -> Data {
        try deadline.check(.png, "encoding")
        let icc = metadata?.profile.map { [UInt8]($0.data) } ?? []
        let exif = metadata?.exif ?? []
        var output: UnsafeMutablePointer<UInt8>?
        var size = 0
        var message = [CChar](repeating: 0, count: Int(WI_MESSAGE_CAPACITY))
        let status = bitmap.pixels.withUnsafeBufferPointer { pixels in
            icc.withUnsafeBufferPointer { icc in
                exif.withUnsafeBufferPointer { exif in
                    wi_png_encode(
                        pixels.baseAddress,
                        UInt32(bitmap.width),
                        UInt32(bitmap.height),
                        bitmap.bytesPerRow,
                        hasAlpha ? 1 : 0,
                        metadata?.interlaced == true ? 1 : 0,
                        Int32(max(0, min(9, compressionLevel))),
                        icc.baseAddress,
                        icc.count,
                        exif.baseAddress,
                        exif.count,
                        deadline.cancellation?.flag,
                        deadline.remainingNanoseconds,
                        &output,
                        &size,
                        &message
                    )
                }
            }
        }
        return try ShimResult.encoded(status, output: output, size: size, message: message, format: .png)
    }
}
