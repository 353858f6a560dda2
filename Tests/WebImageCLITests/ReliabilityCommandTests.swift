import Foundation
import Testing
import WebImage
import WebImageOrigin
import WebImageTestSupport

@Suite("webimage: nothing lost, clear refusals", .serialized, .timeLimit(.minutes(2)))
struct ReliabilityCommandTests {
    @Test("prefetch: every URL it reports finished is on disk when the command exits")
    func prefetchWritesEverything() async throws {
        let folder = try TemporaryDirectory(prefix: "webimage-cli")
        defer { folder.remove() }
        let origin = try await OriginServer.start()
        let count = 300
        for index in 0..<count {
            origin.setRoute("/p\(index).png", .data(FetchCommandTests.png, contentType: "image/png"))
        }
        let list = folder.file("urls.txt")
        try (0..<count).map { origin.url("/p\($0).png").absoluteString }.joined(separator: "\n")
            .write(to: list, atomically: true, encoding: .utf8)
        let cache = folder.file("cache")
        let result = try await CLIRunner.runDetached([
            "prefetch", "--json", "--concurrency", "16", "--cache-dir", cache.path, "--input", list.path,
        ])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try result.jsonLines().last?["finished"] as? Int == count)
        let disk = DiskCache(directory: cache)
        #expect(disk.count == count)
        #expect(disk.temporaryFiles.count == 0)
        await origin.stop()
    }

    @Test("prefetch: a disk write that fails is a failed item with its cause, exit 1")
    func prefetchStoreFailure() async throws {
        let folder = try TemporaryDirectory(prefix: "webimage-cli")
        defer { folder.remove() }
        let origin = try await OriginServer.start()
        origin.setRoute("/a.png", .data(FetchCommandTests.png, contentType: "image/png"))
        let url = origin.url("/a.png").absoluteString
        // A folder where the entry must go: the rename into place fails.
        let cache = folder.file("cache")
        try FileManager.default.createDirectory(
            at: cache.appendingPathComponent(DiskCache.fileName(forKey: url)),
            withIntermediateDirectories: true
        )
        let result = try await CLIRunner.runDetached(["prefetch", "--json", "--cache-dir", cache.path, url])
        #expect(result.status == 1)
        let lines = try result.jsonLines()
        #expect(lines.last?["failed"] as? Int == 1)
        #expect(lines.last?["finished"] as? Int == 0)
        let error = try #require(lines.first?["error"] as? [String: Any])
        #expect(error["code"] as? String == "cacheStoreFailed")
        #expect((error["message"] as? String)?.contains(url) == true)
        await origin.stop()
    }

    @Test("--json into a pipe closed early ends quietly (no trap, no backtrace)")
    func closedPipe() async throws {
        let folder = try TemporaryDirectory(prefix: "webimage-cli")
        defer { folder.remove() }
        let file = folder.file("a.png")
        try FetchCommandTests.png.write(to: file)
        let (reason, status, stderr) = try await onOwnThread {
            let process = Process()
            process.executableURL = CLIRunner.executable
            process.arguments = ["info", "--json"] + Array(repeating: file.path, count: 2000)
            let out = Pipe()
            let err = Pipe()
            process.standardOutput = out
            process.standardError = err
            // The reader goes away before the first line.
            try out.fileHandleForReading.close()
            try process.run()
            let stderr = err.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return (process.terminationReason, process.terminationStatus, stderr)
        }
        #expect(reason == .exit, "killed by signal \(status)")
        #expect(status == 1)
        #expect(!String(decoding: stderr, as: UTF8.self).contains("Fatal error"))
    }

    @Test(
        "Usage errors: --cache-dir naming a file (every subcommand), a missing cache folder, CR/LF in a header, a key as --pin-cert"
    )
    func usageErrors() async throws {
        let folder = try TemporaryDirectory(prefix: "webimage-cli")
        defer { folder.remove() }
        let file = folder.file("not-a-folder")
        try Data("x".utf8).write(to: file)
        let key = folder.file("key.pem")
        try Data(try TestCertificates.selfSigned().privateKeyPEM.utf8).write(to: key)
        let cases: [([String], String)] = [
            (["fetch", "--cache-dir", file.path, "http://127.0.0.1:1/a.png"], "not a folder"),
            (["prefetch", "--cache-dir", file.path, "http://127.0.0.1:1/a.png"], "not a folder"),
            (["cache", "stats", "--cache-dir", file.path], "not a folder"),
            (["demo", "--cache-dir", file.path], "not a folder"),
            (["cache", "stats", "--cache-dir", folder.file("missing").path], "no such folder"),
            (["fetch", "--header", "X-Evil: a\r\nHost: b", "http://127.0.0.1:1/a.png"], "--header"),
            (["fetch", "--pin-cert", key.path, "https://127.0.0.1:1/a.png"], "private key"),
        ]
        for (arguments, words) in cases {
            let result = try await CLIRunner.runDetached(arguments)
            #expect(result.status == 2, "\(arguments): \(result.stderr)")
            #expect(result.stdout.isEmpty)
            #expect(result.stderr.contains(words), "\(arguments): \(result.stderr)")
        }
    }
}
