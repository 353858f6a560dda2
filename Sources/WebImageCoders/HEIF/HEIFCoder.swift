import CHEIF
import CWebImageShims
import Foundation

/// HEIC and HEIF through libheif with its HEVC decoder (libde265; AV1-coded HEIF is AVIF, for
/// ``AVIFCoder``, and fails here with `unsupportedFormat`): the primary image of the file (an
/// image collection shows its primary image; sequences are not read), alpha, HDR to 8-bit, and
/// the file's `irot`/`imir`/`clap` transforms, which libheif applies while decoding (so the
/// result's orientation is always `.up`, whatever
/// ``ImageDecodingOptions/applyOrientation`` says; an EXIF orientation in the file is ignored,
/// as HEIF requires). A thumbnail request that an embedded thumbnail covers decodes that
/// thumbnail instead of the full image. Decoding only: ``canEncode(_:)`` is `false`.
///
/// The pixel limit is checked from the container before anything is decoded; the decode-time
/// limit before and after libheif's decode (libheif 1.15 cannot be interrupted). Stateless
/// and thread-safe.
public struct HEIFCoder: ImageCoding {
    public init() {}

    public func canDecode(_ details: ImageFormatDetails) -> Bool { details.format == .heic || details.format == .heif }

    public func canEncode(_ format: ImageFormat) -> Bool { false }

    public func decode(_ data: Data, options: ImageDecodingOptions) throws(CoderError) -> DecodedImage {
        guard !data.isEmpty else { throw .emptyData }
        let format = ImageFormat(sniffing: data) == .heif ? ImageFormat.heif : .heic
        let deadline = CodingDeadline(options)
        let decoded = data.withUnsafeBytes { bytes in
            Result { () throws(CoderError) -> DecodedImage in
                // AV1-coded HEIF is AVIF, for AVIFCoder (libavif). libheif would decode it with
                // dav1d, whose plugin in libheif 1.15 leaks its input when a decode fails (found
                // by fuzzing); its decoder_id option does not keep that plugin out.
                let container = HEIFContainer(bytes)
                guard !container.types.contains("av01") else { throw .unsupportedFormat(format) }
                // libheif 1.15 recurses through derived images without a bound (a grid made
                // of itself overflowed the stack: found by fuzzing).
                guard !container.hasDerivationLoop else {
                    throw .corruptData(format, "a derived image is made from itself (an iref dimg loop)")
                }
                // A grid or overlay declares its canvas in its data; libheif allocates it before
                // comparing it with the image's ispe (a 684-byte file asked for 2.9 GB).
                for size in container.derivedImageSizes { try options.checkPixelLimit(size, format: format) }
                // libde265 allocates what the sequence parameter set says, not the ispe.
                for size in container.codedImageSizes { try options.checkPixelLimit(size, format: format) }
                let file = try HEIFFile(bytes, format: format)
                return try file.decodePrimaryImage(options: options, deadline: deadline)
            }
        }
        return try decoded.get()
    }

    /// The primary image's size as displayed (after its transforms), from the container alone;
    /// `nil` when libheif cannot parse it.
    static func header(_ bytes: UnsafeRawBufferPointer, format: ImageFormat) -> ImageHeader? {
        guard let file = try? HEIFFile(bytes, format: format) else { return nil }
        return ImageHeader(format: format, size: file.primary.size, frameCount: 1)
    }

    public func encode(
        _ image: DecodedImage,
        as format: ImageFormat,
        options: ImageEncodingOptions
    ) throws(CoderError) -> Data {
        throw .encodingFailed(format, "the HEIF coder only decodes")
    }
}

/// One parsed HEIF file and its primary image handle. Reads `bytes` in place: the buffer must
/// outlive the value.
private final class HEIFFile {
    let format: ImageFormat
    private let context: OpaquePointer
    let primary: HEIFImageHandle

    init(_ bytes: UnsafeRawBufferPointer, format: ImageFormat) throws(CoderError) {
        self.format = format
        try WI_LIBRARY_HEIF.requireForDecoding(format)
        guard let context = heif_context_alloc() else {
            throw .outOfMemory(format, "cannot create the libheif context")
        }
        heif_context_set_max_decoding_threads(context, 0)  // grid tiles on this thread: the caller bounds concurrency
        do throws(CoderError) {
            try HEIFFile.check(
                heif_context_read_from_memory_without_copy(context, bytes.baseAddress, bytes.count, nil),
                "cannot read the HEIF container",
                format: format
            )
            var handle: OpaquePointer?
            try HEIFFile.check(
                heif_context_get_primary_image_handle(context, &handle),
                "cannot find the primary image",
                format: format
            )
            guard let handle else { throw .corruptData(format, "the file names no primary image") }
            primary = HEIFImageHandle(handle)
        } catch {
            heif_context_free(context)
            throw error
        }
        self.context = context
    }

    deinit {
        heif_context_free(context)
    }

    func decodePrimaryImage(options: ImageDecodingOptions, deadline: CodingDeadline) throws(CoderError) -> DecodedImage
    {
        let source = primary.size
        try options.checkPixelLimit(source, format: format)
        let target = options.targetSize(forSource: source)
        let enforced = options.prefersEmbeddedThumbnail ? firstThumbnail() : nil
        let covering = enforced == nil ? try thumbnail(covering: target) : nil
        let chosen = enforced ?? covering ?? primary
        try options.checkPixelLimit(chosen.size, format: format)
        try deadline.check(format)
        let bitmap = try chosen.decodeRGBA(format: format, hasAlpha: primary.hasAlpha)
        try deadline.check(format)
        // A thumbnail without a `colr` box of its own shows the primary image's colours.
        let profile: ColorProfile? =
            options.colorPolicy == .ignore
            ? nil : chosen.colorProfile ?? (chosen === primary ? nil : primary.colorProfile)
        return try DecodedImage(
            frames: [DecodedImage.Frame(bitmap: bitmap)],
            format: format,
            sourceSize: enforced?.size ?? source,
            sourceFrameCount: 1,
            colorProfile: profile
        ).finished(with: options, deadline: deadline)
    }

    /// The first embedded thumbnail (libvips's `thumbnail` load), if any.
    private func firstThumbnail() -> HEIFImageHandle? {
        var id = heif_item_id(0)
        guard heif_image_handle_get_list_of_thumbnail_IDs(primary.pointer, &id, 1) == 1 else { return nil }
        var pointer: OpaquePointer?
        guard heif_image_handle_get_thumbnail(primary.pointer, id, &pointer).code == heif_error_Ok, let pointer else {
            return nil
        }
        return HEIFImageHandle(pointer)
    }

    /// The smallest embedded thumbnail at least `target` on both axes, when `target` is smaller
    /// than the primary image.
    private func thumbnail(covering target: PixelSize) throws(CoderError) -> HEIFImageHandle? {
        let source = primary.size
        guard target.width < source.width || target.height < source.height else { return nil }
        let count = Int(heif_image_handle_get_number_of_thumbnails(primary.pointer))
        guard count > 0 else { return nil }
        var ids = [heif_item_id](repeating: 0, count: count)
        let listed = Int(heif_image_handle_get_list_of_thumbnail_IDs(primary.pointer, &ids, Int32(count)))
        var best: HEIFImageHandle?
        for id in ids.prefix(listed) {
            var pointer: OpaquePointer?
            guard heif_image_handle_get_thumbnail(primary.pointer, id, &pointer).code == heif_error_Ok,
                let pointer
            else { continue }
            let candidate = HEIFImageHandle(pointer)
            let size = candidate.size
            guard size.width >= target.width, size.height >= target.height,
                // The same shape as the primary image (within a pixel of rounding), or it is a
                // crop, not a thumbnail.
                abs(size.width * source.height - size.height * source.width) <= max(source.width, source.height)
            else { continue }
            if best.map({ size.pixelCount < $0.size.pixelCount }) ?? true { best = candidate }
        }
        return best
    }

    static func check(_ error: heif_error, _ context: String, format: ImageFormat) throws(CoderError) {
        guard error.code != heif_error_Ok else { return }
        let reason = error.message.map { String(cString: $0) } ?? "error \(error.code.rawValue)"
        switch (error.code, error.subcode) {
        case (heif_error_Invalid_input, heif_suberror_End_of_data):
            throw .truncatedData(format, "\(context): \(reason)")
        case (heif_error_Memory_allocation_error, heif_suberror_Security_limit_exceeded):
            throw .limitExceeded(format, "\(context): \(reason)")
        case (heif_error_Memory_allocation_error, _):
            throw .outOfMemory(format, "\(context): \(reason)")
        case (heif_error_Unsupported_feature, _), (heif_error_Plugin_loading_error, _):
            throw .unsupportedFormat(format)  // e.g. AV1-coded HEIF: not through libheif
        default:
            throw .corruptData(format, "\(context): \(reason)")
        }
    }
}

/// An image handle of a ``HEIFFile`` (the primary image or a thumbnail), released on deinit.
private final class HEIFImageHandle {
    let pointer: OpaquePointer

    init(_ pointer: OpaquePointer) { self.pointer = pointer }

    deinit { heif_image_handle_release(pointer) }

    /// The size as displayed: after the rotation and crop libheif applies when decoding.
    var size: PixelSize {
        PixelSize(width: Int(heif_image_handle_get_width(pointer)), height: Int(heif_image_handle_get_height(pointer)))
    }

    var hasAlpha: Bool { heif_image_handle_has_alpha_channel(pointer) != 0 }

    /// The `colr` box's ICC profile, or the profile its `nclx` code points describe; `nil` when
    /// there is neither or it says sRGB.
    var colorProfile: ColorProfile? {
        switch heif_image_handle_get_color_profile_type(pointer) {
        case heif_color_profile_type_prof, heif_color_profile_type_rICC:
            let size = heif_image_handle_get_raw_color_profile_size(pointer)
            guard size > 0 else { return nil }
            var bytes = [UInt8](repeating: 0, count: size)
            guard heif_image_handle_get_raw_color_profile(pointer, &bytes).code == heif_error_Ok else { return nil }
            return ColorProfile(iccData: Data(bytes))
        case heif_color_profile_type_nclx:
            var nclx: UnsafeMutablePointer<heif_color_profile_nclx>?
            guard heif_image_handle_get_nclx_color_profile(pointer, &nclx).code == heif_error_Ok, let nclx else {
                return nil
            }
            defer { heif_nclx_color_profile_free(nclx) }
            return ColorProfile.fromCICP(
                primaries: UInt16(nclx.pointee.color_primaries.rawValue),
                transfer: UInt16(nclx.pointee.transfer_characteristics.rawValue)
            )
        default:
            return nil
        }
    }

    /// Decodes to interleaved 8-bit RGBA (HDR converted down; premultiplied alpha undone by
    /// libheif) and copies the rows into a ``Bitmap``.
    func decodeRGBA(format: ImageFormat, hasAlpha: Bool) throws(CoderError) -> Bitmap {
        guard let options = heif_decoding_options_alloc() else {
            throw .outOfMemory(format, "cannot allocate the decoding options")
        }
        defer { heif_decoding_options_free(options) }
        options.pointee.convert_hdr_to_8bit = 1
        var image: OpaquePointer?
        try HEIFFile.check(
            heif_decode_image(pointer, &image, heif_colorspace_RGB, heif_chroma_interleaved_RGBA, options),
            "cannot decode the image",
            format: format
        )
        guard let image else { throw .corruptData(format, "libheif returned no image") }
        defer { heif_image_release(image) }
        let width = Int(heif_image_get_width(image, heif_channel_interleaved))
        let height = Int(heif_image_get_height(image, heif_channel_interleaved))
        var stride: Int32 = 0
        guard width > 0, height > 0, heif_image_get_bits_per_pixel(image, heif_channel_interleaved) == 32,
            let plane = heif_image_get_plane_readonly(image, heif_channel_interleaved, &stride),
            Int(stride) >= width * 4
        else { throw .corruptData(format, "libheif returned pixels in an unexpected layout") }
        return try Bitmap(width: width, height: height, hasAlpha: hasAlpha) { (buffer) throws(CoderError) in
            let rowBytes = width * 4
            guard let destination = buffer.baseAddress else { return }
            for row in 0..<height {
                (destination + row * rowBytes).update(from: plane + row * Int(stride), count: rowBytes)
            }
        }
    }
}
