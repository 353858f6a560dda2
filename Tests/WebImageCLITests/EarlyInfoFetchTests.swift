import Foundation
import Testing
import WebImageCoders
import WebImageOrigin
import WebImageTestSupport

@Suite("webimage fetch --early-info")
struct EarlyInfoFetchTests {
    @Test("--json --early-info writes an info line before the result of a slow download; without --json it is refused")
    func earlyInfo() async throws {
        let png = try ImageCodersManager.shared.encode(
            DecodedImage(frames: [.init(bitmap: GeneratedImages.noise(width: 160, height: 120))], format: .png),
            as: .png
        )
        let folder = try TemporaryDirectory(prefix: "webimage-early-info")
        defer { folder.remove() }
        let origin = try await OriginServer.start()
        defer { Task { await origin.stop() } }
        origin.setRoute(
            "/slow.png",
            .data(png, contentType: "image/png", behavior: .init(chunkSize: 8192, chunkInterval: .milliseconds(30)))
        )
        let url = origin.url("/slow.png").absoluteString
        let run = try await CLIRunner.runDetached([
            "fetch", "--json", "--early-info", "--cache-dir", folder.url.path, url,
        ])
        #expect(run.status == 0, "\(run.stderr)")
        let lines = try run.jsonLines()
        #expect(lines.count == 2, "\(run.stdout)")
        let info = try #require(lines.first)
        #expect(info["event"] as? String == "info" && info["url"] as? String == url)
        #expect(info["format"] as? String == "png" && info["width"] as? Int == 160 && info["height"] as? Int == 120)
        #expect(info["frames"] as? Int == 1)
        #expect(lines.last?["ok"] as? Bool == true && lines.last?["width"] as? Int == 160)

        let refused = try await CLIRunner.runDetached(["fetch", "--early-info", url])
        #expect(refused.status == 2 && refused.stderr.contains("--early-info needs --json"), "\(refused.stderr)")
    }
}
