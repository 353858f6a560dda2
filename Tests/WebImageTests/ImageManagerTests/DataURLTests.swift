import Foundation
import Testing
import WebImage
import WebImageTestSupport

/// `data:` URLs through ``ImageManager``: no network, no disk entry, the same decode.
@Suite("data: URLs")
struct DataURLTests {
    static func png() throws -> Data {
        try ImageCodersManager.shared.encode(
            DecodedImage(frames: [.init(bitmap: GeneratedImages.gradient(width: 30, height: 20))], format: .png),
            as: .png
        )
    }

    @Test("A base64 data: URL decodes, is kept in memory only, and joins the memory cache")
    func base64() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let url = try #require(URL(string: "data:image/png;base64," + Self.png().base64EncodedString()))
        let first = try await fixture.manager.loadImage(with: url)
        #expect(first.image?.width == 30 && first.image?.height == 20 && first.cacheType == .none)
        let second = try await fixture.manager.loadImage(with: url)
        #expect(second.cacheType == .memory)
        await fixture.manager.flush()
        #expect(await fixture.cache.totalDiskCount() == 0, "no disk entry")
    }

    @Test("Percent-encoded bytes decode too; malformed, oversized and non-image URLs fail, naming the cause")
    func percentAndFailures() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let escaped = try Self.png().map { String(format: "%%%02X", $0) }.joined()
        let image = try await fixture.manager.loadImage(with: try #require(URL(string: "data:image/png," + escaped)))
        #expect(image.image?.width == 30)
        for (text, code) in [
            ("data:image/png;base64", WebImageError.Code.invalidURL),
            ("data:image/png;base64,@@@@", .invalidURL),
            ("data:text/plain,hello", .badImageData),
        ] {
            await #expect {
                _ = try await fixture.manager.loadImage(with: try #require(URL(string: text)))
            } throws: { error in
                (error as? WebImageError)?.code == code
            }
        }
        let small = ImageManager(
            cache: fixture.cache,
            loader: ImageDownloader(
                configuration: {
                    var c = ImageDownloader.Configuration()
                    c.maximumDownloadSize = 100
                    return c
                }()
            )
        )
        await #expect {
            _ = try await small.loadImage(
                with: try #require(URL(string: "data:image/png;base64," + Self.png().base64EncodedString()))
            )
        } throws: { error in
            (error as? WebImageError)?.code == .downloadTooLarge
        }
    }
}
