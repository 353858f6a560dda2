import CJPEG
import CWebImageShims
import Foundation

/// JPEG through libjpeg-turbo: baseline, progressive, arithmetic, grayscale, CMYK/YCCK (Adobe
/// inverted CMYK handled), EXIF orientation, DCT-scaled thumbnails, and progressive previews.
/// Encodes baseline or progressive JPEG at a given quality. Stateless and thread-safe.
public struct JPEGCoder: ImageCoding, ProgressiveImageDecoding {
    /// The colour model JPEG encoding writes.
    public enum ColorModel: Sendable, Hashable {
        /// YCbCr colour (the default).
        case rgb
        /// One gray channel.
        case grayscale
        /// Adobe CMYK, stored inverted as Photoshop does (for print workflows and tests).
        case cmyk
    }

    /// The colour model `encode` writes. Default `.rgb`.
    public var colorModel: ColorModel

    public init(colorModel: ColorModel = .rgb) {
        self.colorModel = colorModel
    }

    public func canDecode(_ details: ImageFormatDetails) -> Bool { details.format == .jpeg }

    public func canEncode(_ format: ImageFormat) -> Bool { format == .jpeg }

    public func decode(_ data: Data, options: ImageDecodingOptions) throws(CoderError) -> DecodedImage {
        try decode(data, options: options, allowTruncation: false)
    }

    public func makeIncrementalDecoder(options: ImageDecodingOptions) -> any IncrementalImageDecoding {
        JPEGIncrementalDecoder(options: options)
    }

    /// Decodes; with `allowTruncation` data that ends early gives a partial image instead of an
    /// error (libjpeg fills the missing part).
    /// Scans a JPEG may have: a progressive file has about 10; thousands are a decoding-time attack.
    static let maxScans: Int32 = 1000

    func decode(
        _ data: Data,
        options: ImageDecodingOptions,
        allowTruncation: Bool
    ) throws(CoderError)
        -> DecodedImage
    {
        guard !data.isEmpty else { throw .emptyData }
        return try data.withBytes { (raw) throws(CoderError) in
            guard let base = raw.baseAddress?.assumingMemoryBound(to: UInt8.self),
                let decoder = wi_jpeg_decoder_create(base, raw.count)
            else { throw .outOfMemory(.jpeg, "cannot create a JPEG decompressor") }
            defer { wi_jpeg_decoder_destroy(decoder) }
            let deadline = CodingDeadline(options)
            wi_jpeg_decoder_set_limits(
                decoder,
                Self.maxScans,
                deadline.remainingNanoseconds,
                options.cancellation?.flag
            )
            return try decode(with: decoder, options: options, allowTruncation: allowTruncation, deadline: deadline)
        }
    }

    /// DCT scaling: the numerator of the smallest of libjpeg-turbo's N/8 scales whose output
    /// (the source's sides × N/8, rounded up) still covers `floor`; 8 when none smaller does.
    static func dctScale(of source: PixelSize, covering floor: PixelSize) -> Int {
        (1...7).first { numerator in
            let scaled = dctScaled(source, by: numerator)
            return scaled.width >= floor.width && scaled.height >= floor.height
        } ?? 8
    }

    /// libjpeg-turbo's output size at scale `numerator`/8: each side rounded up.
    static func dctScaled(_ source: PixelSize, by numerator: Int) -> PixelSize {
        PixelSize(width: (source.width * numerator + 7) / 8, height: (source.height * numerator + 7) / 8)
    }

    private func decode(
        with decoder: OpaquePointer,
        options: ImageDecodingOptions,
        allowTruncation: Bool,
        deadline: CodingDeadline
    )
        throws(CoderError) -> DecodedImage
    {
        func failure() -> CoderError {
            let message = String(cString: wi_jpeg_decoder_message(decoder))
            if wi_jpeg_decoder_limit_hit(decoder) != 0 { return .limitExceeded(.jpeg, message) }
            if wi_jpeg_decoder_hit_end_of_data(decoder) != 0 {
                return .truncatedData(.jpeg, message.isEmpty ? "the data ends before the image" : message)
            }
            return .corruptData(.jpeg, message)
        }
        guard wi_jpeg_read_header(decoder) == WI_OK else { throw failure() }
        let info = wi_jpeg_decoder_info(decoder)!
        let source = PixelSize(width: Int(info.pointee.image_width), height: Int(info.pointee.image_height))
        try options.checkPixelLimit(source, format: .jpeg)

        var exifLength = 0
        let exif = wi_jpeg_exif(decoder, &exifLength)
        let orientation =
            exif.flatMap { EXIFReader.orientation(in: UnsafeRawBufferPointer(start: $0, count: exifLength)) } ?? .up
        // Copied now: the saved markers live in libjpeg's image pool, freed when decoding finishes.
        let keptEXIF = options.keepsMetadata ? exif.map { Data(bytes: $0, count: exifLength) } : nil

        let target = options.reductionFloor(forSource: source, orientation: orientation)
        info.pointee.scale_num = UInt32(Self.dctScale(of: source, covering: target))
        info.pointee.scale_denom = 8

        let colorSpace = info.pointee.jpeg_color_space
        let isCMYK = colorSpace == JCS_CMYK || colorSpace == JCS_YCCK
        let profile = options.colorPolicy == .ignore ? nil : Self.embeddedProfile(decoder, colorSpace: colorSpace)
        guard wi_jpeg_start(decoder, isCMYK ? 1 : 0) == WI_OK else { throw failure() }
        let width = Int(info.pointee.output_width)
        let height = Int(info.pointee.output_height)
        let invertedCMYK = wi_jpeg_saw_adobe_marker(decoder) != 0
        // Rows go to sRGB as they are decoded, while they are in cache (CMYK through a CMYK profile).
        let rowTransform = profile.flatMap {
            let cmykLayout = invertedCMYK ? WI_PIXELS_CMYK_INVERTED : WI_PIXELS_CMYK
            return ColorTransform.toSRGB(from: $0, policy: options.colorPolicy, cmykLayout: cmykLayout)
        }

        let bitmap = try Bitmap(width: width, height: height, hasAlpha: false) { (buffer) throws(CoderError) in
            var rowsRead: UInt32 = 0
            let status = Self.readRows(
                decoder,
                into: buffer,
                width: width,
                height: height,
                transform: rowTransform,
                rowsRead: &rowsRead
            )
            guard status == WI_OK else { throw failure() }
            if Int(rowsRead) < height {
                // Only reachable when libjpeg stops early; keep the rest defined.
                let start = Int(rowsRead) * width * 4
                buffer.baseAddress!.advanced(by: start).initialize(repeating: 0x80, count: buffer.count - start)
            }
            if isCMYK && rowTransform == nil { Self.convertCMYKToRGBA(buffer, inverted: invertedCMYK) }
        }
        let truncated = wi_jpeg_decoder_hit_end_of_data(decoder) != 0
        guard wi_jpeg_finish(decoder) == WI_OK || truncated else { throw failure() }
        if truncated && !allowTruncation {
            throw .truncatedData(.jpeg, "the data ends before the image (\(source) expected)")
        }
        var image = DecodedImage(
            frames: [.init(bitmap: bitmap)],
            format: .jpeg,
            orientation: orientation,
            isPartial: truncated,
            sourceSize: source,
            // A profile used above (or a CMYK one, which cannot describe RGB pixels) is not carried
            // on; one the policy keeps, or sRGB's, is (the policy drops it later if asked).
            colorProfile: isCMYK || rowTransform != nil ? nil : profile
        )
        image.exif = keptEXIF
        return try (consume image).finished(with: options, deadline: deadline)
    }

    /// Reads every row into `buffer`, converting each batch with `transform` when there is one.
    private static func readRows(
        _ decoder: OpaquePointer,
        into buffer: UnsafeMutableBufferPointer<UInt8>,
        width: Int,
        height: Int,
        transform: ColorTransform?,
        rowsRead: inout UInt32
    ) -> wi_status {
        guard let transform else {
            return wi_jpeg_read_rows(decoder, buffer.baseAddress, width * 4, UInt32(height), nil, &rowsRead)
        }
        return transform.withCTransform { pointer in
            wi_jpeg_read_rows(decoder, buffer.baseAddress, width * 4, UInt32(height), pointer, &rowsRead)
        }
    }

    /// The APP2 ICC profile when it fits the JPEG's colour space (RGB for YCbCr and RGB files,
    /// gray for grayscale ones, CMYK for CMYK and YCCK); `nil` otherwise.
    private static func embeddedProfile(_ decoder: OpaquePointer, colorSpace: J_COLOR_SPACE) -> ColorProfile? {
        var length = 0
        guard let bytes = wi_jpeg_icc_profile(decoder, &length) else { return nil }
        defer { free(bytes) }
        guard let profile = ColorProfile(iccData: Data(bytes: bytes, count: length)) else { return nil }
        switch colorSpace {
        case JCS_GRAYSCALE: return profile.colorSpace == .gray ? profile : nil
        case JCS_CMYK, JCS_YCCK: return profile.colorSpace == .cmyk ? profile : nil
        default: return profile.colorSpace == .rgb ? profile : nil
        }
    }

    /// Converts CMYK (as stored; Adobe files store it inverted) to opaque RGBA in place.
    static func convertCMYKToRGBA(_ buffer: UnsafeMutableBufferPointer<UInt8>, inverted: Bool) {
        var offset = 0
        while offset + 3 < buffer.count {
            var c = UInt32(buffer[offset])
            var m = UInt32(buffer[offset + 1])
            var y = UInt32(buffer[offset + 2])
            var k = UInt32(buffer[offset + 3])
            if !inverted {
                c = 255 - c
                m = 255 - m
                y = 255 - y
                k = 255 - k
            }
            buffer[offset] = UInt8((c * k + 127) / 255)
            buffer[offset + 1] = UInt8((m * k + 127) / 255)
            buffer[offset + 2] = UInt8((y * k + 127) / 255)
            buffer[offset + 3] = 255
            offset += 4
        }
    }

    public func encode(
        _ image: DecodedImage,
        as format: ImageFormat,
        options: ImageEncodingOptions
    )
        throws(CoderError) -> Data
    {
        guard format == .jpeg else { throw .encodingFailed(format, "the JPEG coder writes only JPEG") }
        // The profile embedded must fit the colour model written.
        let image = try image.withProfileFitting(colorModel == .grayscale ? .gray : colorModel == .cmyk ? .cmyk : .rgb)
        var bitmap = image.bitmap
        if bitmap.hasAlpha { bitmap = bitmap.flattened(onto: RGBA(r: 255, g: 255, b: 255)) }
        let quality = Int32(max(1, min(100, (options.quality * 100).rounded())))
        let model: wi_jpeg_color_model =
            switch colorModel {
            case .rgb: WI_JPEG_RGB
            case .grayscale: WI_JPEG_GRAYSCALE
            case .cmyk: WI_JPEG_CMYK
            }
        // Keep the orientation (pixels stay as stored, so viewers need the tag) and any EXIF kept.
        let exif = EXIFWriter.block(for: image)
        // Pixels in another space than sRGB say which (APP2 ICC_PROFILE).
        let icc = image.colorProfile.map { [UInt8]($0.data) } ?? []
        var output: UnsafeMutablePointer<UInt8>?
        var size = 0
        var message = [CChar](repeating: 0, count: Int(WI_MESSAGE_CAPACITY))
        let deadline = CodingDeadline(options)
        let status = bitmap.pixels.withUnsafeBufferPointer { pixels in
            exif.withUnsafeBufferPointer { exif in
                icc.withUnsafeBufferPointer { icc in
                    wi_jpeg_encode(
                        pixels.baseAddress,
                        UInt32(bitmap.width),
                        UInt32(bitmap.height),
                        bitmap.bytesPerRow,
                        quality,
                        options.progressive ? 1 : 0,
                        model,
                        exif.baseAddress,
                        exif.count,
                        icc.baseAddress,
                        icc.count,
                        options.cancellation?.flag,
                        deadline.remainingNanoseconds,
                        &output,
                        &size,
                        &message
                    )
                }
            }
        }
        return try ShimResult.encoded(status, output: output, size: size, message: message, format: .jpeg)
    }
}

extension Bitmap {
    /// The image composited over an opaque `background` (for formats without alpha).
    public func flattened(onto background: RGBA) -> Bitmap {
        var copy = self
        copy.pixels.withUnsafeMutableBufferPointer { buffer in
            var offset = 0
            while offset + 3 < buffer.count {
                let alpha = UInt32(buffer[offset + 3])
                if alpha != 255 {
                    let inverse = 255 - alpha
                    buffer[offset] = UInt8(
                        (UInt32(buffer[offset]) * alpha + UInt32(background.r) * inverse + 127) / 255
                    )
                    buffer[offset + 1] = UInt8(
                        (UInt32(buffer[offset + 1]) * alpha + UInt32(background.g) * inverse + 127) / 255
                    )
                    buffer[offset + 2] = UInt8(
                        (UInt32(buffer[offset + 2]) * alpha + UInt32(background.b) * inverse + 127) / 255
                    )
                    buffer[offset + 3] = 255
                }
                offset += 4
            }
        }
        copy.hasAlpha = false
        return copy
    }
}
