import Foundation
import Testing
import WebImageCoders
import WebImageTestSupport

@Suite("Format sniffing")
struct ImageFormatSniffingTests {
    let image = DecodedImage(bitmap: GeneratedImages.gradient(width: 16, height: 16), format: .png)

    @Test("Encoded images sniff as their own format", arguments: [ImageFormat.jpeg, .png, .gif, .webp])
    func encodedFormats(format: ImageFormat) throws {
        let data = try ImageCodersManager.shared.encode(image, as: format)
        #expect(ImageFormat(sniffing: data) == format)
    }

    @Test("Signatures of formats we only recognise")
    func recognisedSignatures() {
        func ftyp(_ brands: String...) -> Data {
            var bytes: [UInt8] = [0, 0, 0, UInt8(8 + brands.count * 4 + 4)] + Array("ftyp".utf8)
            bytes += Array(brands[0].utf8) + [0, 0, 0, 0]
            for brand in brands.dropFirst() { bytes += Array(brand.utf8) }
            return Data(bytes)
        }
        let cases: [(Data, ImageFormat)] = [
            (ftyp("heic", "mif1", "heic"), .heic),
            (ftyp("mif1", "heic"), .heic),
            (ftyp("mif1", "miaf"), .heif),
            (ftyp("avif", "mif1"), .avif),
            (ftyp("mif1", "avif"), .avif),
            (ftyp("isom", "mp41"), .unknown),
            (Data([0x49, 0x49, 0x2A, 0x00, 8, 0, 0, 0]), .tiff),
            (Data([0x4D, 0x4D, 0x00, 0x2A, 0, 0, 0, 8]), .tiff),
            (Data("BM".utf8) + Data(count: 30), .bmp),
            (Data([0, 0, 1, 0, 1, 0, 16, 16]), .ico),
            (Data("%PDF-1.7\n".utf8), .pdf),
            (Data([0xFF, 0x0A, 0xFA, 0x7F]), .jxl),
            (Data([0, 0, 0, 0x0C, 0x4A, 0x58, 0x4C, 0x20, 0x0D, 0x0A, 0x87, 0x0A]), .jxl),
            (Data("<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"/>".utf8), .svg),
            (Data("  <svg width=\"10\"></svg>".utf8), .svg),
            (Data("<html><body>not an image</body></html>".utf8), .unknown),
            (Data(), .unknown),
            (Data([0xFF]), .unknown),
            (Data("GIF8".utf8), .unknown),
        ]
        for (data, expected) in cases {
            #expect(ImageFormat(sniffing: data) == expected, "\(Array(data.prefix(16)))")
        }
    }

    @Test("APNG is png with isAnimated")
    func apng() {
        let builder = PNGBuilder(width: 2, height: 2, colorType: .rgba)
        let frame = PNGBuilder.Frame(width: 2, height: 2) { _, _ in [255, 0, 0, 255] }
        let animated = builder.buildAnimated(frames: [frame, frame])
        let still = builder.build { _, _ in [0, 0, 0, 255] }
        #expect(ImageFormatDetails(sniffing: animated).format == .png)
        #expect(ImageFormatDetails(sniffing: animated).isAnimated)
        #expect(!ImageFormatDetails(sniffing: still).isAnimated)
        #expect(ImageFormatDetails(sniffing: still).hasAlpha == true)
    }

    @Test("WebP lossy, lossless and animated are told apart")
    func webpFlavours() throws {
        let lossy = try WebPCoder().encode(image, as: .webp, options: .init(quality: 0.8))
        let lossless = try WebPCoder().encode(image, as: .webp, options: .init(lossless: true))
        let animation = GeneratedImages.animation(
            width: 8,
            height: 8,
            colors: [RGBA(r: 255, g: 0, b: 0), RGBA(r: 0, g: 0, b: 255)],
            format: .webp
        )
        let animated = try WebPCoder().encode(animation, as: .webp, options: .init())
        #expect(ImageFormatDetails(sniffing: lossy).webpEncoding == .lossy)
        #expect(ImageFormatDetails(sniffing: lossless).webpEncoding == .lossless)
        #expect(ImageFormatDetails(sniffing: animated).webpEncoding == .extended)
        #expect(ImageFormatDetails(sniffing: animated).isAnimated)
        #expect(!ImageFormatDetails(sniffing: lossy).isAnimated)
    }

    @Test("A damaged PNG signature still sniffs as png and fails to decode clearly")
    func damagedPNGSignature() throws {
        var bytes = [UInt8](PNGBuilder(width: 4, height: 4, colorType: .gray).build { _, _ in [7] })
        bytes[1] = UInt8(ascii: "Q")
        #expect(ImageFormat(sniffing: Data(bytes)) == .png)
        #expect(throws: CoderError.corruptData(.png, "the PNG signature is wrong")) {
            try ImageCodersManager.shared.decode(Data(bytes))
        }
    }

    @Test("MIME types and file extensions")
    func mimeTypesAndExtensions() {
        #expect(ImageFormat.jpeg.mimeType == "image/jpeg")
        #expect(ImageFormat.jpeg.fileExtension == "jpg")
        #expect(ImageFormat.webp.mimeType == "image/webp")
        #expect(ImageFormat.svg.mimeType == "image/svg+xml")
        #expect(ImageFormat.unknown.fileExtension.isEmpty)
        for format in ImageFormat.allCases where format != .unknown {
            #expect(ImageFormat(mimeType: format.mimeType) == format)
            #expect(!format.fileExtension.isEmpty)
        }
        #expect(ImageFormat(mimeType: "image/png; charset=binary") == .png)
        #expect(ImageFormat(mimeType: "text/html") == nil)
    }
}
