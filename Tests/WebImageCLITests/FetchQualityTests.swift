import Foundation
import Testing
import WebImage
import WebImageCoders
import WebImageOrigin
import WebImageTestSupport

/// `webimage fetch --format best` and `--quality auto`.
@Suite("webimage fetch: best format and automatic quality", .timeLimit(.minutes(2)))
struct FetchQualityTests {
    static func png(_ bitmap: Bitmap) throws -> Data {
        try PNGCoder().encode(DecodedImage(bitmap: bitmap, format: .png), as: .png, options: .init())
    }

    @Test(
        "--format best --quality auto: a flat graphic lossless; a photo lossy, within the DSSIM aimed at, smaller than JPEG 90"
    )
    func bestAndAuto() async throws {
        let folder = try TemporaryDirectory(prefix: "webimage-best")
        defer { folder.remove() }
        let origin = try await OriginServer.start()
        defer { Task { await origin.stop() } }
        let colors: [RGBA] = [.init(r: 250, g: 250, b: 250), .init(r: 10, g: 90, b: 200)]
        let flat = GeneratedImages.blocks(width: 240, height: 160, colors: colors, blockSize: 40)
        let photo = GeneratedImages.photoLike(width: 320, height: 240, detail: 0.3)
        origin.setRoute("/flat.png", .data(try Self.png(flat), contentType: "image/png"))
        origin.setRoute("/photo.png", .data(try Self.png(photo), contentType: "image/png"))
        let run = try await CLIRunner.runDetached([
            "fetch", "--json", "--no-disk-cache", "--format", "best", "--quality", "auto", "--output-dir",
            folder.file("out").path, origin.url("/flat.png").absoluteString, origin.url("/photo.png").absoluteString,
        ])
        #expect(run.status == 0, "\(run.stderr)")
        let outputs = try run.jsonLines().compactMap { $0["output"] as? String }
        try #require(outputs.count == 2)
        let flatData = try Data(contentsOf: URL(fileURLWithPath: outputs[0]))
        #expect([.png, .webp].contains(ImageFormat(sniffing: flatData)), "lossless for a flat image")
        #expect(try ImageCodersManager.shared.decode(flatData).bitmap.pixels == flat.pixels)
        let photoData = try Data(contentsOf: URL(fileURLWithPath: outputs[1]))
        #expect([.avif, .webp, .jpeg].contains(ImageFormat(sniffing: photoData)))
        let decoded = try ImageCodersManager.shared.decode(photoData).bitmap
        #expect(try ImageDifference.dssim(photo, decoded) <= 0.0165)
        let jpeg90 = try JPEGCoder().encode(
            DecodedImage(bitmap: photo, format: .png),
            as: .jpeg,
            options: .init(quality: 0.9)
        )
        #expect(photoData.count < jpeg90.count)
        let bad = try await CLIRunner.runDetached([
            "fetch", "--quality", "most", "-o", folder.file("x.jpg").path, "http://127.0.0.1:9/x",
        ])
        #expect(bad.status == 2 && bad.stderr.contains("--quality must be 1 to 100 or auto, got most"))
        await origin.stop()
    }
}
