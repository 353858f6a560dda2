import CWebP
import Foundation

/// WebP through libwebp: lossy, lossless, alpha, animated (frames composed by libwebp's
/// animation decoder, durations, loop count), EXIF orientation, scaled decoding for thumbnails,
/// and row-by-row previews. Encodes lossy (quality) or lossless, still or animated.
/// Stateless and thread-safe.
public struct WebPCoder: ImageCoding, ProgressiveImageDecoding {
    public init() {}

    public func canDecode(_ details: ImageFormatDetails) -> Bool { details.format == .webp }

    public func canEncode(_ format: ImageFormat) -> Bool { format == .webp }

    public func makeIncrementalDecoder(options: ImageDecodingOptions) -> any IncrementalImageDecoding {
        WebPIncrementalDecoder(options: options)
    }

    public func decode(_ data: Data, options: ImageDecodingOptions) throws(CoderError) -> DecodedImage {
        guard !data.isEmpty else { throw .emptyData }
        let deadline = CodingDeadline(options)
        var features = WebPBitstreamFeatures()
        let status = data.withUnsafeBytes { bytes in
            WebPGetFeatures(bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count, &features)
        }
        guard status == VP8_STATUS_OK else { throw Self.error(status, "cannot read the WebP header") }
        let source = PixelSize(width: Int(features.width), height: Int(features.height))
        try options.checkPixelLimit(source, format: .webp)
        let orientation = Self.orientation(in: data)
        if features.has_animation != 0 {
            // Frames on demand, or delivered smaller than the canvas: decoded one at a time.
            if let reduced = try AnimatedImage.decodeFrameByFrame(data, options: options) { return reduced }
            return try WebPAnimationDecoder(
                data: data,
                options: options,
                orientation: orientation,
                declaresAlpha: features.has_alpha != 0,
                deadline: deadline
            ).decode()
        }
        let target = options.targetSize(forSource: source, orientation: orientation)
        let hasAlpha = features.has_alpha != 0
        let bitmap = try Self.decodeStill(data, size: target, scaled: target != source, hasAlpha: hasAlpha)
        var image = DecodedImage(
            frames: [.init(bitmap: bitmap)],
            format: .webp,
            orientation: orientation,
            sourceSize: source,
            colorProfile: options.colorPolicy == .ignore ? nil : Self.embeddedProfile(in: data)
        )
        if options.keepsMetadata { image.exif = Self.exif(in: data) }
        return try (consume image).finished(with: options, deadline: deadline)
    }

    /// The RGB ICC profile of the file's ICCP chunk, if the extended header says there is one;
    /// `partial` data may end anywhere after it (the chunk comes before the image data).
    static func embeddedProfile(in data: Data, partial: Bool = false) -> ColorProfile? {
        guard let icc = chunk("ICCP", flag: ICCP_FLAG, in: data, partial: partial),
            let profile = ColorProfile(iccData: icc),
            profile.colorSpace == .rgb
        else { return nil }
        return profile
    }

    /// The file's EXIF block (without an `Exif\0\0` prefix), if the extended header says there is one.
    static func exif(in data: Data) -> Data? {
        guard let block = chunk("EXIF", flag: EXIF_FLAG, in: data) else { return nil }
        return block.starts(with: [0x45, 0x78, 0x69, 0x66, 0, 0]) ? Data(block.dropFirst(6)) : block
    }

    /// The payload of the first `fourCC` chunk of an extended WebP whose header sets `flag`.
    private static func chunk(_ fourCC: String, flag: WebPFeatureFlags, in data: Data, partial: Bool = false) -> Data? {
        guard ImageFormatDetails(sniffing: data).webpEncoding == .extended else { return nil }
        return data.withUnsafeBytes { bytes -> Data? in
            var webpData = WebPData(bytes: bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), size: bytes.count)
            var state = WEBP_DEMUX_PARSING_HEADER
            guard let demux = partial ? WebPDemuxPartial(&webpData, &state) : WebPDemux(&webpData) else { return nil }
            defer { WebPDemuxDelete(demux) }
            guard WebPDemuxGetI(demux, WEBP_FF_FORMAT_FLAGS) & UInt32(flag.rawValue) != 0 else { return nil }
            var iterator = WebPChunkIterator()
            guard WebPDemuxGetChunk(demux, fourCC, 1, &iterator) != 0 else { return nil }
            defer { WebPDemuxReleaseChunkIterator(&iterator) }
            guard let start = iterator.chunk.bytes else { return nil }
            return Data(bytes: start, count: iterator.chunk.size)
        }
    }

    /// `webp` with `chunks` (ICCP, EXIF) added; libwebpmux sets the extended header's flags.
    static func embedding(_ chunks: [(fourCC: String, payload: Data)], in webp: Data) throws(CoderError) -> Data {
        guard !chunks.isEmpty else { return webp }
        guard
            let mux = webp.withUnsafeBytes({ bytes -> OpaquePointer? in
                var image = WebPData(bytes: bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), size: bytes.count)
                return WebPMuxCreate(&image, 1)
            })
        else { throw .encodingFailed(.webp, "libwebpmux cannot read the encoded image") }
        defer { WebPMuxDelete(mux) }
        for (fourCC, payload) in chunks {
            let set = payload.withUnsafeBytes { bytes -> WebPMuxError in
                var chunk = WebPData(bytes: bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), size: bytes.count)
                return WebPMuxSetChunk(mux, fourCC, &chunk, 1)
            }
            guard set == WEBP_MUX_OK else { throw .encodingFailed(.webp, "libwebpmux cannot add the \(fourCC) chunk") }
        }
        var assembled = WebPData()
        guard WebPMuxAssemble(mux, &assembled) == WEBP_MUX_OK, let bytes = assembled.bytes else {
            throw .encodingFailed(.webp, "libwebpmux cannot assemble the file")
        }
        defer { WebPDataClear(&assembled) }
        return Data(bytes: bytes, count: assembled.size)
    }

    /// Decodes a still WebP into a new bitmap at `size`; with `scaled` libwebp resamples while
    /// decoding (its rescaler premultiplies alpha, so it is used only when the size changes).
    static func decodeStill(_ data: Data, size: PixelSize, scaled: Bool, hasAlpha: Bool) throws(CoderError) -> Bitmap {
        try Bitmap(width: size.width, height: size.height, hasAlpha: hasAlpha) { (buffer) throws(CoderError) in
            var config = WebPDecoderConfig()
            guard WebPInitDecoderConfig(&config) != 0 else { throw .outOfMemory(.webp, "libwebp version mismatch") }
            config.output.colorspace = MODE_RGBA
            config.output.is_external_memory = 1
            config.output.u.RGBA.rgba = buffer.baseAddress
            config.output.u.RGBA.stride = Int32(size.width * 4)
            config.output.u.RGBA.size = buffer.count
            if scaled {
                config.options.use_scaling = 1
                config.options.scaled_width = Int32(size.width)
                config.options.scaled_height = Int32(size.height)
            }
            let status = data.withUnsafeBytes { bytes in
                WebPDecode(bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count, &config)
            }
            WebPFreeDecBuffer(&config.output)
            guard status == VP8_STATUS_OK else { throw error(status, "cannot decode the WebP image") }
        }
    }

    static func error(_ status: VP8StatusCode, _ context: String) -> CoderError {
        switch status {
        case VP8_STATUS_NOT_ENOUGH_DATA: .truncatedData(.webp, "\(context): not enough data")
        case VP8_STATUS_OUT_OF_MEMORY: .outOfMemory(.webp, context)
        case VP8_STATUS_UNSUPPORTED_FEATURE: .corruptData(.webp, "\(context): unsupported feature")
        default: .corruptData(.webp, "\(context): bitstream error (\(status.rawValue))")
        }
    }

    /// The orientation from the file's EXIF chunk, if the extended header says there is one.
    static func orientation(in data: Data) -> ImageOrientation {
        guard ImageFormatDetails(sniffing: data).webpEncoding == .extended else { return .up }
        return data.withUnsafeBytes { bytes -> ImageOrientation in
            var webpData = WebPData(bytes: bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), size: bytes.count)
            guard let demux = WebPDemux(&webpData) else { return .up }
            defer { WebPDemuxDelete(demux) }
            guard WebPDemuxGetI(demux, WEBP_FF_FORMAT_FLAGS) & UInt32(EXIF_FLAG.rawValue) != 0 else { return .up }
            var iterator = WebPChunkIterator()
            guard WebPDemuxGetChunk(demux, "EXIF", 1, &iterator) != 0 else { return .up }
            defer { WebPDemuxReleaseChunkIterator(&iterator) }
            let chunk = UnsafeRawBufferPointer(start: iterator.chunk.bytes, count: iterator.chunk.size)
            return EXIFReader.orientation(in: chunk) ?? .up
        }
    }

    public func encode(
        _ image: DecodedImage,
        as format: ImageFormat,
        options: ImageEncodingOptions
    )
        throws(CoderError) -> Data
    {
        guard format == .webp else { throw .encodingFailed(format, "the WebP coder writes only WebP") }
        let image = try image.withProfileFitting(.rgb)
        let encoded: Data
        if image.frames.count > 1 && !options.firstFrameOnly {
            encoded = try WebPAnimationEncoder(image: image, options: options).encode()
        } else {
            encoded = try WebPEncoding.encodeStill(image.bitmap, options: options)
        }
        var chunks: [(fourCC: String, payload: Data)] = []
        if let profile = image.colorProfile { chunks.append(("ICCP", profile.data)) }
        if image.exif != nil { chunks.append(("EXIF", Data(EXIFWriter.block(for: image)))) }
        return try Self.embedding(chunks, in: encoded)
    }
}

/// Decodes an animated WebP with libwebp's `WebPAnimDecoder`, which composes each frame on the
/// canvas (blending and disposal included).
struct WebPAnimationDecoder {
    let data: Data
    let options: ImageDecodingOptions
    let orientation: ImageOrientation
    let declaresAlpha: Bool
    let deadline: CodingDeadline

    func decode() throws(CoderError) -> DecodedImage {
        let image = try data.withBytes { (bytes) throws(CoderError) in
            var webpData = WebPData(bytes: bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), size: bytes.count)
            var decoderOptions = WebPAnimDecoderOptions()
            guard WebPAnimDecoderOptionsInit(&decoderOptions) != 0 else {
                throw .outOfMemory(.webp, "libwebp version mismatch")
            }
            decoderOptions.color_mode = MODE_RGBA
            decoderOptions.use_threads = 0
            guard let decoder = WebPAnimDecoderNew(&webpData, &decoderOptions) else {
                throw .corruptData(.webp, "cannot parse the WebP animation")
            }
            defer { WebPAnimDecoderDelete(decoder) }
            return try decodeFrames(decoder)
        }
        return try (consume image).finished(with: options, deadline: deadline)
    }

    private func decodeFrames(_ decoder: OpaquePointer) throws(CoderError) -> DecodedImage {
        var info = WebPAnimInfo()
        guard WebPAnimDecoderGetInfo(decoder, &info) != 0 else {
            throw .corruptData(.webp, "cannot read the WebP animation header")
        }
        let canvas = PixelSize(width: Int(info.canvas_width), height: Int(info.canvas_height))
        try options.checkPixelLimit(canvas, format: .webp)
        let frameCount = Int(info.frame_count)
        let wanted = options.firstFrameOnly ? 1 : frameCount
        try options.checkAnimationLimits(frameCount: wanted, canvas: canvas, format: .webp)
        var frames: [DecodedImage.Frame] = []
        var previousTimestamp: Int32 = 0
        var hasAlpha = declaresAlpha
        while frames.count < wanted, WebPAnimDecoderHasMoreFrames(decoder) != 0 {
            try deadline.check(.webp)
            var buffer: UnsafeMutablePointer<UInt8>?
            var timestamp: Int32 = 0
            guard WebPAnimDecoderGetNext(decoder, &buffer, &timestamp) != 0, let buffer else {
                throw .corruptData(.webp, "cannot decode frame \(frames.count + 1) of \(frameCount)")
            }
            var bitmap = Bitmap(
                width: canvas.width,
                height: canvas.height,
                hasAlpha: true,
                pixels: Array(UnsafeBufferPointer(start: buffer, count: canvas.pixelCount * 4))
            )
            bitmap.hasAlpha = bitmap.containsTransparency
            hasAlpha = hasAlpha || bitmap.hasAlpha
            let milliseconds = Int(timestamp - previousTimestamp)
            previousTimestamp = timestamp
            frames.append(.init(bitmap: bitmap, duration: milliseconds <= 10 ? 0.1 : Double(milliseconds) / 1000))
        }
        guard !frames.isEmpty else { throw .corruptData(.webp, "the WebP animation has no frames") }
        if hasAlpha { for index in frames.indices { frames[index].bitmap.hasAlpha = true } }
        var image = DecodedImage(
            frames: frames,
            loopCount: Int(info.loop_count),
            format: .webp,
            orientation: orientation,
            sourceSize: canvas,
            sourceFrameCount: frameCount,
            colorProfile: options.colorPolicy == .ignore ? nil : WebPCoder.embeddedProfile(in: data)
        )
        if options.keepsMetadata { image.exif = WebPCoder.exif(in: data) }
        return image
    }
}
