import Foundation
import Testing
import WebImageCoders
import WebImageHTTP
import WebImageOrigin
import WebImageTestSupport

@Suite("webimage serve", .timeLimit(.minutes(1)))
struct ServeCommandTests {
    /// `webimage serve ARGS` running until `stop()`; `url` is what its listening line names.
    final class RunningServer: Sendable {
        let process: Process
        let url: String

        private init(process: Process, url: String) {
            self.process = process
            self.url = url
        }

        /// Starts the binary and waits, on a thread of its own (not the cooperative pool), for
        /// its listening line.
        static func start(_ arguments: [String]) async throws -> RunningServer {
            let process = Process()
            process.executableURL = CLIRunner.executable
            process.arguments = ["serve"] + arguments
            let output = Pipe()
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            try process.run()
            let line: Data = await withCheckedContinuation { continuation in
                Thread {
                    var line = Data()
                    while let byte = try? output.fileHandleForReading.read(upToCount: 1), !byte.isEmpty,
                        byte != Data("\n".utf8)
                    {
                        line.append(byte)
                    }
                    continuation.resume(returning: line)
                }.start()
            }
            let object = try? JSONSerialization.jsonObject(with: line) as? [String: String]
            return RunningServer(process: process, url: object?["listening"] ?? "")
        }

        /// SIGTERM, then the exit status.
        func stop() -> Int32 {
            process.terminate()
            process.waitUntilExit()
            return process.terminationStatus
        }
    }

    @Test("Serves resized images on the port it prints, and exits 0 on SIGTERM")
    func serves() async throws {
        let origin = try await OriginServer.start()
        let photo = try PNGCoder().encode(
            DecodedImage(bitmap: GeneratedImages.gradient(width: 120, height: 80), format: .png),
            as: .png,
            options: .init()
        )
        origin.setRoute("/a.png", .data(photo, contentType: "image/png"))
        let folder = try TemporaryDirectory(prefix: "webimage-serve")
        defer { folder.remove() }
        let server = try await RunningServer.start([
            "--bind", "127.0.0.1:0", "--insecure", "--allow-loopback", "--json", "--cache-dir", folder.url.path,
        ])
        #expect(server.url.hasPrefix("http://127.0.0.1:"))
        let session = HTTPSession()
        let (data, response) = try await session.data(
            for: .init(
                url: try #require(URL(string: "\(server.url)/_/w:60/plain/\(origin.url("/a.png").absoluteString)"))
            )
        )
        #expect(response.statusCode == 200 && response.headers["Content-Type"] == "image/png")
        let image = try ImageCodersManager.shared.decode(data)
        #expect(image.width == 60 && image.height == 40)
        try await session.shutdown()
        #expect(server.stop() == 0)
        await origin.stop()
    }

    @Test("Without a key it refuses to start, saying why; bad flags are usage errors")
    func refusesWithoutKey() async throws {
        let noKey = try await CLIRunner.runDetached(
            ["serve", "--bind", "127.0.0.1:0"],
            environment: ["WEBIMAGE_KEY": ""]
        )
        #expect(noKey.status == 2)
        #expect(noKey.stderr.contains("no signing key"), "\(noKey.stderr)")
        let badKey = try await CLIRunner.runDetached(["serve", "--key", "xyz", "--salt", "00"])
        #expect(badKey.status == 2 && badKey.stderr.contains("not hex"), "\(badKey.stderr)")
        let unpaired = try await CLIRunner.runDetached(["serve", "--key", "00"])
        #expect(unpaired.status == 2 && unpaired.stderr.contains("one salt per key"))
        let bind = try await CLIRunner.runDetached(["serve", "--insecure", "--bind", "nowhere"])
        #expect(bind.status == 2 && bind.stderr.contains("--bind 'nowhere'"))
        let preset = try await CLIRunner.runDetached(["serve", "--insecure", "--preset", "x=zoom:2"])
        #expect(
            preset.status == 2 && preset.stderr.contains("unknown or unsupported option 'zoom'"),
            "\(preset.stderr)"
        )
    }
}
