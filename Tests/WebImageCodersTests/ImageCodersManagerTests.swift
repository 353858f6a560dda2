import Foundation
import Testing
import WebImageCoders
import WebImageTestSupport

/// A coder that claims PNG and answers with a fixed 1×1 image.
struct FixedPNGCoder: ImageCoding {
    func canDecode(_ details: ImageFormatDetails) -> Bool { details.format == .png }
    func canEncode(_ format: ImageFormat) -> Bool { false }
    func decode(_ data: Data, options: ImageDecodingOptions) throws(CoderError) -> DecodedImage {
        DecodedImage(bitmap: Bitmap(width: 1, height: 1, fill: RGBA(r: 1, g: 2, b: 3)), format: .png)
    }
    func encode(_ image: DecodedImage, as format: ImageFormat, options: ImageEncodingOptions) throws(CoderError) -> Data
    {
        throw .encodingFailed(format, "not supported")
    }
}

@Suite("Coder registry")
struct ImageCodersManagerTests {
    let png = PNGBuilder(width: 5, height: 5, colorType: .gray).build { _, _ in [100] }

    @Test("A user-added coder goes first and wins for its formats")
    func userCoderWins() throws {
        let manager = ImageCodersManager()
        #expect(try manager.decode(png).width == 5)
        manager.addCoder(FixedPNGCoder())
        #expect(try manager.decode(png).width == 1)
        #expect(manager.coders.first is FixedPNGCoder)
        // Formats it does not claim still go to the built-in coders.
        let gif = try manager.encode(
            DecodedImage(bitmap: GeneratedImages.gradient(width: 3, height: 3), format: .gif),
            as: .gif
        )
        #expect(try manager.decode(gif).width == 3)
        manager.removeCoder(ofType: FixedPNGCoder.self)
        #expect(try manager.decode(png).width == 5)
    }

    @Test("No encoder for a format is a clear error")
    func missingEncoder() {
        #expect(throws: CoderError.encodingFailed(.heic, "no encoder for heic")) {
            try ImageCodersManager.shared.encode(
                DecodedImage(bitmap: Bitmap(width: 1, height: 1), format: .png),
                as: .heic
            )
        }
    }

    @Test("Concurrent decoding while coders are added")
    func concurrentUse() async throws {
        let manager = ImageCodersManager()
        let data = png
        try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<32 {
                group.addTask {
                    if index == 16 { manager.addCoder(FixedPNGCoder()) }
                    return try manager.decode(data).width
                }
            }
            for try await width in group { #expect(width == 5 || width == 1) }
        }
    }
}
