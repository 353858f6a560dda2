import CWebP
import Foundation

/// libwebp encoder set-up shared by still and animated encoding.
enum WebPEncoding {
    /// An encoder configuration for `options`: lossless keeps RGB under transparent pixels too.
    static func config(for options: ImageEncodingOptions) throws(CoderError) -> WebPConfig {
        var config = WebPConfig()
        guard WebPConfigInit(&config) != 0 else { throw .encodingFailed(.webp, "libwebp version mismatch") }
        config.lossless = options.lossless ? 1 : 0
        config.exact = options.lossless ? 1 : 0
        config.quality = Float(max(0, min(1, options.quality)) * 100)
        return config
    }

    /// Runs `body` with a picture holding `bitmap`'s pixels (ARGB, as lossless and animation need).
    static func withPicture<Result>(
        of bitmap: Bitmap,
        _ body: (inout WebPPicture) throws(CoderError) -> Result
    ) throws(CoderError) -> Result {
        var picture = WebPPicture()
        guard WebPPictureInit(&picture) != 0 else { throw .encodingFailed(.webp, "libwebp version mismatch") }
        picture.width = Int32(bitmap.width)
        picture.height = Int32(bitmap.height)
        picture.use_argb = 1
        defer { WebPPictureFree(&picture) }
        let imported = bitmap.pixels.withUnsafeBufferPointer {
            WebPPictureImportRGBA(&picture, $0.baseAddress, Int32(bitmap.bytesPerRow))
        }
        guard imported != 0 else {
            throw .encodingFailed(.webp, "cannot import a \(bitmap.width)×\(bitmap.height) picture")
        }
        return try body(&picture)
    }

    /// Encodes one still picture; libwebp's progress callback stops it when the options' time
    /// limit has passed or their cancellation is raised.
    static func encodeStill(_ bitmap: Bitmap, options: ImageEncodingOptions) throws(CoderError) -> Data {
        var config = try config(for: options)
        var deadline = CodingDeadline(options)
        return try withPicture(of: bitmap) { (picture) throws(CoderError) in
            var writer = WebPMemoryWriter()
            WebPMemoryWriterInit(&writer)
            defer { WebPMemoryWriterClear(&writer) }
            picture.writer = WebPMemoryWrite
            try withUnsafeMutablePointer(to: &deadline) { (deadlinePointer) throws(CoderError) in
                picture.user_data = UnsafeMutableRawPointer(deadlinePointer)
                picture.progress_hook = { _, picture in
                    guard let state = picture?.pointee.user_data else { return 1 }
                    return state.assumingMemoryBound(to: CodingDeadline.self).pointee.isOver ? 0 : 1
                }
                try withUnsafeMutablePointer(to: &writer) { (pointer) throws(CoderError) in
                    picture.custom_ptr = UnsafeMutableRawPointer(pointer)
                    guard WebPEncode(&config, &picture) != 0 else {
                        if picture.error_code == VP8_ENC_ERROR_USER_ABORT {
                            try deadlinePointer.pointee.check(.webp, "encoding")
                        }
                        throw .encodingFailed(.webp, "libwebp error \(picture.error_code.rawValue)")
                    }
                }
            }
            return Data(bytes: writer.mem, count: writer.size)
        }
    }
}
