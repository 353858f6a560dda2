import Foundation
import Testing
import WebImageHTTP
import WebImageOrigin
import WebImageTestSupport

@Suite("Download tasks", .timeLimit(.minutes(2)))
struct DownloadTaskTests {
    /// Peak resident memory added while `body` runs (Linux; `nil` elsewhere).
    static func peakMemoryGrowth(_ body: () async throws -> Void) async rethrows -> Int? {
        func status(_ field: String) -> Int? {
            guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
            for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
                return line.split(separator: " ").dropFirst().first.flatMap { Int($0) }.map { $0 * 1024 }
            }
            return nil
        }
        guard (try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)) != nil,
            let before = status("VmRSS")
        else {
            try await body()
            return nil
        }
        try await body()
        return status("VmHWM").map { $0 - before }
    }

    @Test("400 MB streams to disk with bounded memory and is moved into place (in a process of its own)")
    func largeDownload() async throws {
        // Peak RSS is process-wide: beside the other suites it once added 300 MB of their own, so
        // the download runs in a child process where only its memory counts. The child reports on
        // standard error: a failure's words, or the growth in bytes.
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let report: String
            do {
                report = "growth \(try await DownloadTaskTests.downloadLargeBody() ?? -1)"
            } catch {
                report = "failed: \(error)"
            }
            FileHandle.standardError.write(Data(report.utf8))
        }
        let report = result.map { String(decoding: $0.standardErrorContent, as: UTF8.self) } ?? ""
        let growth = report.split(separator: "\n").last.flatMap { line in
            line.hasPrefix("growth ") ? Int(line.dropFirst("growth ".count)) : nil
        }
        #expect(growth != nil, "the download's process said: \(report)")
        // A body kept in memory would add all 400 MB; streaming adds the client's buffers.
        // -1: no /proc here, nothing to measure.
        if let growth { #expect(growth < 200 << 20, "peak memory grew by \(growth >> 20) MB for a 400 MB body") }
    }

    /// Why ``downloadLargeBody()`` failed.
    struct LargeDownloadFailure: Error, CustomStringConvertible {
        let description: String
    }

    /// Downloads a 400 MB body to a file, checks the file is whole and in place, and returns how
    /// much peak memory grew meanwhile (`nil` where it cannot be measured).
    static func downloadLargeBody() async throws -> Int? {
        let context = try await HTTPTestContext.make()
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let size = 400 * 1024 * 1024
        // Data(count:) is zero pages the origin never touches, so only the client's memory grows.
        context.origin.setRoute("/huge", OriginRoute(body: Data(count: size), behavior: .init(chunkSize: 1 << 20)))
        let destination = directory.file("nested/huge.bin")
        let growth = try await Self.peakMemoryGrowth {
            let (url, response) = try await context.session.download(
                .init(url: context.origin.url("/huge")),
                to: destination
            )
            guard url == destination, response.statusCode == 200 else {
                throw LargeDownloadFailure(description: "answered \(response.statusCode) at \(url.path)")
            }
        }
        await context.finish()
        let written = (try FileManager.default.attributesOfItem(atPath: destination.path)[.size] as? NSNumber)?.intValue
        guard written == size else {
            throw LargeDownloadFailure(description: "wrote \(written ?? -1) of \(size) bytes")
        }
        guard !FileManager.default.fileExists(atPath: destination.path + ".download") else {
            throw LargeDownloadFailure(description: "the partial file stayed beside the destination")
        }
        return growth
    }

    @Test("An interrupted download resumes with Range/If-Range and completes the file")
    func resume() async throws {
        let context = try await HTTPTestContext.make()
        let directory = try TemporaryDirectory()
        let payload = Data((0..<500_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        let destination = directory.file("resumable.bin")
        context.origin.setRoute(
            "/file",
            OriginRoute(
                headers: [("ETag", "\"v1\"")],
                body: payload,
                behavior: .init(chunkSize: 50_000, truncateAfter: 200_000)
            )
        )
        await #expect(throws: HTTPSessionError.self) {
            try await context.session.download(.init(url: context.origin.url("/file")), to: destination)
        }
        #expect(!FileManager.default.fileExists(atPath: destination.path))
        let partial = try Data(contentsOf: URL(fileURLWithPath: destination.path + ".download"))
        #expect(partial.count > 0 && partial.count <= 200_000)

        context.origin.setRoute("/file", OriginRoute(headers: [("ETag", "\"v1\"")], body: payload))
        let (_, response) = try await context.session.download(.init(url: context.origin.url("/file")), to: destination)
        #expect(
            response.statusCode == 206,
            "\(context.origin.requests.map { "\($0.method) \($0.path) \($0.headers.filter { $0.name.contains("range") })" })"
        )
        #expect(try Data(contentsOf: destination) == payload)
        let resumed = try #require(context.origin.requests.last)
        #expect(resumed.header("range") == "bytes=\(partial.count)-" && resumed.header("if-range") == "\"v1\"")

        // A changed resource (new ETag) is sent whole, and replaces the partial data.
        let second = Data(repeating: 7, count: 1000)
        context.origin.setRoute(
            "/file",
            OriginRoute(headers: [("ETag", "\"v2\"")], body: second, behavior: .init(truncateAfter: 10))
        )
        _ = try? await context.session.download(.init(url: context.origin.url("/file")), to: destination)
        context.origin.setRoute("/file", OriginRoute(headers: [("ETag", "\"v3\"")], body: second))
        let (_, fresh) = try await context.session.download(.init(url: context.origin.url("/file")), to: destination)
        #expect(try fresh.statusCode == 200 && Data(contentsOf: destination) == second)
        directory.remove()
        await context.finish()
    }

    @Test("A 404 download fails and leaves no file")
    func notFound() async throws {
        let context = try await HTTPTestContext.make()
        let directory = try TemporaryDirectory()
        let destination = directory.file("missing.bin")
        do {
            _ = try await context.session.download(.init(url: context.origin.url("/nothing")), to: destination)
            Issue.record("a 404 download succeeded")
        } catch {
            #expect(error.code == .unacceptableStatusCode && error.statusCode == 404)
        }
        #expect(!FileManager.default.fileExists(atPath: destination.path))
        #expect(!FileManager.default.fileExists(atPath: destination.path + ".download"), "the 404 page was kept")
        #expect(!FileManager.default.fileExists(atPath: destination.path + ".download-validator"))
        directory.remove()
        await context.finish()
    }

    @Test("A failed download keeps its partial file only when a later task can resume it")
    func partialFilesOnFailure() async throws {
        let context = try await HTTPTestContext.make()
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let payload = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let destination = directory.file("photo.bin")
        let partial = destination.path + ".download"
        func download(_ path: String) async -> HTTPSessionError? {
            do {
                _ = try await context.session.download(.init(url: context.origin.url(path)), to: destination)
                return nil
            } catch { return error }
        }
        /// A download of `path` whose origin sends `headers` and hangs up after a third of the body.
        func cutOff(_ path: String, headers: [(String, String)]) async -> HTTPSessionError? {
            let behavior = OriginRoute.Behavior(chunkSize: 50_000, truncateAfter: 100_000)
            context.origin.setRoute(path, OriginRoute(headers: headers, body: payload, behavior: behavior))
            return await download(path)
        }

        // Without a validator nothing could resume it, so nothing is left.
        #expect(await cutOff("/plain", headers: []) != nil)
        #expect(!FileManager.default.fileExists(atPath: partial), "an unresumable partial file was left")
        // A weak ETag cannot make If-Range work (RFC 9110 13.1.5): nothing is left either.
        #expect(await cutOff("/weak", headers: [("ETag", "W/\"w1\"")]) != nil)
        #expect(!FileManager.default.fileExists(atPath: partial), "a partial file only a weak ETag validates was left")
        // With a strong ETag it is kept for the next task to resume.
        #expect(await cutOff("/tagged", headers: [("ETag", "\"t1\"")]) != nil)
        #expect(FileManager.default.fileExists(atPath: partial))

        // A failure before any response (the origin gone) leaves that partial file as it was.
        let kept = try Data(contentsOf: URL(fileURLWithPath: partial))
        let stopped = try await OriginServer.start()
        let unreachable = stopped.url("/tagged")
        await stopped.stop()
        do {
            _ = try await context.session.download(.init(url: unreachable), to: destination)
            Issue.record("a download from a stopped origin succeeded")
        } catch {
            #expect(error.code == .cannotConnect || error.code == .connectionLost, "\(error)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: partial)) == kept)

        // An error status replaces it with nothing: its body is not part of the resource.
        #expect(await download("/absent")?.statusCode == 404)
        #expect(!FileManager.default.fileExists(atPath: partial), "the error page was kept as a partial file")
        #expect(!FileManager.default.fileExists(atPath: destination.path + ".download-validator"))
        #expect(!FileManager.default.fileExists(atPath: destination.path))
        await context.finish()
    }
}
