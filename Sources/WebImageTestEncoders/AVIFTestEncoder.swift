import CAVIF
import Foundation
import WebImageCoders

/// Writes AVIF stills with libavif whose `nclx` box carries the given H.273 code points, for
/// tests of colour management (the library's own encoder writes sRGB or an ICC profile).
public enum AVIFTestEncoder {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// `bitmap` (opaque) as a near-lossless 4:4:4 AVIF whose pixels are declared to be in the
    /// space of `primaries` and `transfer` (ITU-T H.273's `ColourPrimaries` and
    /// `TransferCharacteristics`).
    public static func encode(_ bitmap: Bitmap, primaries: UInt16, transfer: UInt16) throws -> Data {
        guard let image = avifImageCreate(UInt32(bitmap.width), UInt32(bitmap.height), 8, AVIF_PIXEL_FORMAT_YUV444)
        else { throw Failure(description: "avifImageCreate") }
        defer { avifImageDestroy(image) }
        image.pointee.colorPrimaries = avifColorPrimaries(primaries)
        image.pointee.transferCharacteristics = avifTransferCharacteristics(transfer)
        image.pointee.matrixCoefficients = avifMatrixCoefficients(AVIF_MATRIX_COEFFICIENTS_BT601)
        image.pointee.yuvRange = AVIF_RANGE_FULL
        var rgb = avifRGBImage()
        avifRGBImageSetDefaults(&rgb, image)
        rgb.format = AVIF_RGB_FORMAT_RGBA
        rgb.depth = 8
        rgb.ignoreAlpha = AVIF_TRUE
        rgb.rowBytes = UInt32(bitmap.bytesPerRow)
        let converted = bitmap.pixels.withUnsafeBufferPointer { pixels -> avifResult in
            rgb.pixels = UnsafeMutablePointer(mutating: pixels.baseAddress)
            return avifImageRGBToYUV(image, &rgb)
        }
        guard converted == AVIF_RESULT_OK else { throw Failure(description: "avifImageRGBToYUV") }
        guard let encoder = avifEncoderCreate() else { throw Failure(description: "avifEncoderCreate") }
        defer { avifEncoderDestroy(encoder) }
        encoder.pointee.maxThreads = 1
        encoder.pointee.speed = 8
        encoder.pointee.minQuantizer = 0
        encoder.pointee.maxQuantizer = 0
        var output = avifRWData(data: nil, size: 0)
        defer { avifRWDataFree(&output) }
        guard avifEncoderWrite(encoder, image, &output) == AVIF_RESULT_OK, let bytes = output.data else {
            throw Failure(description: "avifEncoderWrite")
        }
        return Data(bytes: bytes, count: output.size)
    }
}
