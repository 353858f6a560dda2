import Foundation
import Testing
import WebImageCoders
import WebImageTestSupport

@Suite("webimage fetch: data: URLs")
struct DataURLFetchTests {
    @Test("fetch decodes a data: URL offline (no cache entry) and reports a bad one by its cause")
    func fetchesDataURLs() async throws {
        let png = try ImageCodersManager.shared.encode(
            DecodedImage(frames: [.init(bitmap: GeneratedImages.gradient(width: 12, height: 8))], format: .png),
            as: .png
        )
        let folder = try TemporaryDirectory(prefix: "webimage-data-url")
        defer { folder.remove() }
        let good = try await CLIRunner.runDetached(
            ["fetch", "--json", "--cache-dir", folder.url.path, "data:image/png;base64," + png.base64EncodedString()]
        )
        #expect(good.status == 0, "\(good.stderr)")
        let line = try #require(try good.jsonLines().first)
        #expect(line["ok"] as? Bool == true && line["width"] as? Int == 12 && line["format"] as? String == "png")
        let stats = try await CLIRunner.runDetached(["cache", "stats", "--json", "--cache-dir", folder.url.path])
        #expect(try stats.jsonLines().first?["count"] as? Int == 0, "no disk entry: \(stats.stdout)")
        let bad = try await CLIRunner.runDetached([
            "fetch", "--json", "--cache-dir", folder.url.path, "data:image/png;base64,AAAA",
        ])
        let failure = try #require(try bad.jsonLines().first)
        #expect(bad.status == 9 && failure["ok"] as? Bool == false)
        #expect(((failure["error"] as? [String: Any])?["message"] as? String)?.contains("data: URL") == true)
    }
}
