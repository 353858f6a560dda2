import Foundation
import Testing
import WebImageTestSupport

@testable import WebImageCoders

/// EXIF carried through decode and encode when asked (``ImageDecodingOptions/keepsMetadata``),
/// with the orientation tag kept true, and imgproxy's copyright-only stripping.
@Suite("Metadata: EXIF kept, rewritten upright, stripped to the copyright")
struct MetadataTests {
    /// A big-endian EXIF block with Orientation (274) = 6, Artist (315) and Model (272).
    static let exif: [UInt8] = {
        func be16(_ value: Int) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xFF)] }
        func be32(_ value: Int) -> [UInt8] { be16(value >> 16) + be16(value & 0xFFFF) }
        let artist = Array("Bo\0".utf8)  // fits in the entry
        let model = Array("Model Nine\0".utf8)
        let dataStart = 8 + 2 + 3 * 12 + 4
        var block: [UInt8] = [0x4D, 0x4D, 0x00, 0x2A] + be32(8) + be16(3)
        block += be16(272) + be16(2) + be32(model.count) + be32(dataStart)
        block += be16(274) + be16(3) + be32(1) + be16(6) + be16(0)
        block += be16(315) + be16(2) + be32(artist.count) + artist + [0]
        return block + be32(0) + model + [0]
    }()

    static func ascii(_ exif: Data?, _ tag: Int) -> String? {
        exif.flatMap { EXIFDirectory([UInt8]($0)) }?.ascii(tag).map { String(decoding: $0, as: UTF8.self) }
    }

    @Test("JPEG, PNG, WebP and AVIF write the EXIF kept; JPEG, PNG and WebP read it back")
    func roundTrips() throws {
        var image = DecodedImage(bitmap: GeneratedImages.gradient(width: 24, height: 16), format: .jpeg)
        image.exif = Data(Self.exif)
        image.orientation = .up  // turned upright: the written tag must say 1, not the source's 6
        var keeping = ImageDecodingOptions()
        keeping.keepsMetadata = true
        for format in [ImageFormat.jpeg, .png, .webp] {
            let data = try ImageCodersManager.shared.encode(image, as: format, options: .init(quality: 0.9))
            let decoded = try ImageCodersManager.shared.decode(data, options: keeping)
            #expect(Self.ascii(decoded.exif, 272) == "Model Nine", "\(format)")
            #expect(Self.ascii(decoded.exif, 315) == "Bo", "\(format)")
            #expect(decoded.orientation == .up, "\(format)")
            #expect(try ImageCodersManager.shared.decode(data).exif == nil, "\(format): not kept unless asked")
        }
        let avif = try ImageCodersManager.shared.encode(image, as: .avif, options: .init(quality: 0.9))
        #expect(avif.range(of: Data("Model Nine".utf8)) != nil)

        // The orientation tag follows the image: a JPEG left as stored says 6 again.
        var stored = image
        stored.orientation = .right
        let jpeg = try JPEGCoder().encode(stored, as: .jpeg, options: .init())
        #expect(try JPEGCoder().decode(jpeg, options: keeping).orientation == .right)
    }

    @Test("Stripping keeps only the artist and copyright, or nothing")
    func copyrightOnly() throws {
        var image = DecodedImage(bitmap: GeneratedImages.gradient(width: 8, height: 8), format: .jpeg)
        image.exif = Data(Self.exif)
        var stripped = image
        stripped.stripMetadata(keepingCopyright: true)
        #expect(Self.ascii(stripped.exif, 315) == "Bo" && Self.ascii(stripped.exif, 272) == nil)
        stripped.stripMetadata(keepingCopyright: false)
        #expect(stripped.exif == nil)
        var cameraOnly = DecodedImage(bitmap: GeneratedImages.gradient(width: 8, height: 8), format: .jpeg)
        cameraOnly.exif = Data(EXIFWriter.orientationBlock(.left))
        cameraOnly.stripMetadata(keepingCopyright: true)
        #expect(cameraOnly.exif == nil, "no artist, no copyright: nothing kept")
        #expect(EXIFDirectory([1, 2, 3]) == nil && EXIFDirectory(Array(repeating: 0x49, count: 64)) == nil)
    }
}
