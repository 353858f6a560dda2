import CHEIF
import Foundation
import WebImageCoders

/// Writes HEIC files with libheif's HEVC encoder (x265), or AVIF with its AV1 encoder (aom),
/// for tests and fuzz seeds (not a
/// general-purpose encoder: it checks little and is not tuned): alpha, an
/// `irot`/`imir` orientation, and an embedded thumbnail made from a separate image (so a test
/// can tell which one a decoder read).
public enum HEIFTestEncoder {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// `bitmap` as a HEIC file (lossless when `lossless`, else quality 90); `orientation` is
    /// stored as `irot`/`imir`; `thumbnail` is encoded to fit a `thumbnailBox`-pixel square.
    /// `others` are stored before it as further top-level images (a collection); `bitmap` stays
    /// the primary image. `iccProfile` is stored in the primary image's `colr` box. `format`
    /// `.avif` writes AV1 items in an AVIF file instead.
    // shape: a test fixture's knobs, each defaulted; call sites name only the ones they vary.
    public static func encode(
        _ bitmap: Bitmap,
        orientation: ImageOrientation = .up,
        iccProfile: Data? = nil,
        lossless: Bool = true,
        thumbnail: Bitmap? = nil,
        thumbnailBox: Int = 32,
        others: [Bitmap] = [],
        format: ImageFormat = .heic
    ) throws -> Data {
        guard let context = heif_context_alloc() else { throw Failure(description: "heif_context_alloc") }
        defer { heif_context_free(context) }
        var encoder: OpaquePointer?
        let compression = format == .avif ? heif_compression_AV1 : heif_compression_HEVC
        try check(heif_context_get_encoder_for_format(context, compression, &encoder))
        guard let encoder else { throw Failure(description: "no \(format) encoder in libheif") }
        defer { heif_encoder_release(encoder) }
        try check(lossless ? heif_encoder_set_lossless(encoder, 1) : heif_encoder_set_lossy_quality(encoder, 90))
        let options = heif_encoding_options_alloc()
        defer { heif_encoding_options_free(options) }
        options?.pointee.image_orientation = heif_orientation(rawValue: UInt32(orientation.rawValue))
        for other in others {
            let image = try makeImage(other)
            defer { heif_image_release(image) }
            try check(heif_context_encode_image(context, image, encoder, options, nil))
        }
        let image = try makeImage(bitmap)
        defer { heif_image_release(image) }
        if let iccProfile {
            try iccProfile.withUnsafeBytes { bytes in
                try check(heif_image_set_raw_color_profile(image, "prof", bytes.baseAddress, bytes.count))
            }
        }
        var handle: OpaquePointer?
        try check(heif_context_encode_image(context, image, encoder, options, &handle))
        defer { heif_image_handle_release(handle) }
        try check(heif_context_set_primary_image(context, handle))
        if let thumbnail {
            let small = try makeImage(thumbnail)
            defer { heif_image_release(small) }
            var thumbnailHandle: OpaquePointer?
            try check(
                heif_context_encode_thumbnail(
                    context,
                    small,
                    handle,
                    encoder,
                    options,
                    Int32(thumbnailBox),
                    &thumbnailHandle
                )
            )
            if let thumbnailHandle { heif_image_handle_release(thumbnailHandle) }
        }
        final class Output { var data = Data() }
        let output = Output()
        var writer = heif_writer(writer_api_version: 1) { _, bytes, count, userdata in
            guard let bytes, let userdata else {
                return heif_error(
                    code: heif_error_Usage_error,
                    subcode: heif_suberror_Null_pointer_argument,
                    message: nil
                )
            }
            Unmanaged<Output>.fromOpaque(userdata).takeUnretainedValue().data.append(
                bytes.assumingMemoryBound(to: UInt8.self),
                count: count
            )
            return heif_error(code: heif_error_Ok, subcode: heif_suberror_Unspecified, message: nil)
        }
        try withExtendedLifetime(output) {
            try check(heif_context_write(context, &writer, Unmanaged.passUnretained(output).toOpaque()))
        }
        return output.data
    }

    /// A 256×128 red image with a blue thumbnail fitted to 64 pixels (64×32), as HEIC or AVIF:
    /// a decoder that shows blue read the thumbnail.
    public static func redWithBlueThumbnail(format: ImageFormat) throws -> Data {
        func solid(_ color: RGBA) -> Bitmap { Bitmap(width: 256, height: 128, fill: color) }
        return try encode(
            solid(RGBA(r: 255, g: 0, b: 0)),
            thumbnail: solid(RGBA(r: 0, g: 0, b: 255)),
            thumbnailBox: 64,
            format: format
        )
    }

    private static func makeImage(_ bitmap: Bitmap) throws -> OpaquePointer {
        var image: OpaquePointer?
        let chroma = bitmap.hasAlpha ? heif_chroma_interleaved_RGBA : heif_chroma_interleaved_RGB
        try check(heif_image_create(Int32(bitmap.width), Int32(bitmap.height), heif_colorspace_RGB, chroma, &image))
        guard let image else { throw Failure(description: "heif_image_create returned nothing") }
        try check(
            heif_image_add_plane(
                image,
                heif_channel_interleaved,
                Int32(bitmap.width),
                Int32(bitmap.height),
                bitmap.hasAlpha ? 32 : 24
            )
        )
        var stride: Int32 = 0
        guard let plane = heif_image_get_plane(image, heif_channel_interleaved, &stride) else {
            throw Failure(description: "heif_image_get_plane returned nothing")
        }
        let channels = bitmap.hasAlpha ? 4 : 3
        for y in 0..<bitmap.height {
            for x in 0..<bitmap.width {
                let pixel = bitmap[x, y]
                let offset = y * Int(stride) + x * channels
                plane[offset] = pixel.r
                plane[offset + 1] = pixel.g
                plane[offset + 2] = pixel.b
                if channels == 4 { plane[offset + 3] = pixel.a }
            }
        }
        return image
    }

    private static func check(_ error: heif_error) throws {
        guard error.code != heif_error_Ok else { return }
        throw Failure(description: error.message.map { String(cString: $0) } ?? "libheif error \(error.code.rawValue)")
    }
}
