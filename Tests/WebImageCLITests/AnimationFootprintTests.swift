import Foundation
import Testing
import WebImageCoders
import WebImageHTTP
import WebImageTestSupport

/// Large animations thumbnailed by `webimage fetch` and resized by `webimage serve`: every
/// frame, its duration and the loop count survive, and the process holds about one frame's
/// canvases at a time, not the whole animation (the 2048² × 48 WebP is 805 MB decoded whole, and
/// was refused by the 512 MiB animation limit before frames were read one at a time).
@Suite("Large animations in bounded memory", .timeLimit(.minutes(10)))
struct AnimationFootprintTests {
    typealias RunningServer = ServeCommandTests.RunningServer

    struct Fixture: Sendable, CustomTestStringConvertible {
        var name: String
        var width: Int
        var height: Int
        var frames: Int
        var format: ImageFormat
        /// The lines the peak resident memory stays under, in MB: `webimage fetch`'s, the server's.
        var fetchLineMB: Int
        var serveLineMB: Int

        var testDescription: String { "\(width)×\(height) × \(frames) frames, \(format)" }

        func make() throws -> Data {
            if format == .gif { return GIFBuilder.checkerAnimation(width: width, height: height, frames: frames) }
            return try GeneratedImages.movingSquareAnimation(
                width: width,
                height: height,
                frames: frames,
                format: format
            )
        }
    }

    // The lines are issue 43's targets. Measured with a debug build beside a busy machine:
    // fetch 93, 105 and 243 MB; the server 67, 108 and 267 MB (GIF, 2048², 4096²).
    static let fixtures = [
        Fixture(
            name: "long.gif",
            width: 1024,
            height: 1024,
            frames: 160,
            format: .gif,
            fetchLineMB: 250,
            serveLineMB: 350
        ),
        Fixture(
            name: "wide.webp",
            width: 2048,
            height: 2048,
            frames: 48,
            format: .webp,
            fetchLineMB: 250,
            serveLineMB: 350
        ),
        Fixture(
            name: "huge.webp",
            width: 4096,
            height: 4096,
            frames: 16,
            format: .webp,
            fetchLineMB: 300,
            serveLineMB: 450
        ),
    ]

    /// Writes the fixture into `folder` (off the cooperative pool: seconds of encoding) and
    /// returns what its header and frame table say.
    static func write(_ fixture: Fixture, in folder: TemporaryDirectory) async throws -> AnimationInfo {
        let data = try await onOwnThread { try fixture.make() }
        try data.write(to: folder.file(fixture.name))
        let info = try AnimatedImage(data: data).info
        #expect(info.frameCount == fixture.frames, "\(fixture)")
        return info
    }

    /// `result` is `source` resized to fit 256×256: every frame, each duration (to the
    /// millisecond), the loop count.
    static func expectResized(_ result: AnimationInfo, from source: AnimationInfo, _ fixture: Fixture) {
        #expect(max(result.canvasSize.width, result.canvasSize.height) == 256, "\(fixture): \(result.canvasSize)")
        #expect(result.frameCount == source.frameCount, "\(fixture)")
        let milliseconds = { (info: AnimationInfo) in info.durations.map { Int(($0 * 1000).rounded()) } }
        #expect(milliseconds(result) == milliseconds(source), "\(fixture)")
        #expect(result.loopCount == source.loopCount, "\(fixture)")
    }

    @Test(
        "webimage fetch --thumbnail or --resize 256x256 -o out.webp and webimage serve rs:fit:256:256 keep every frame at a bounded peak",
        arguments: fixtures
    )
    func thumbnailAndResize(_ fixture: Fixture) async throws {
        let folder = try TemporaryDirectory(prefix: "webimage-animation")
        let cache = try TemporaryDirectory(prefix: "webimage-animation-cache")
        defer {
            folder.remove()
            cache.remove()
        }
        let source = try await Self.write(fixture, in: folder)
        // One fixture is enough for `info`, whose frames are decoded the way the others' are.
        if fixture.format == .gif { try await Self.info(fixture, source: source, in: folder) }
        try await Self.fetchThumbnail(fixture, source: source, in: folder)
        try await Self.serveResize(fixture, source: source, folder: folder, cache: cache)
    }

    /// `webimage info` decodes the animation a frame at a time (its frames together are over
    /// the animation limit) and reports it decoded.
    static func info(_ fixture: Fixture, source: AnimationInfo, in folder: TemporaryDirectory) async throws {
        let path = folder.file(fixture.name).path
        let result = try await onOwnThread { try CLIRunner.run(["info", "--json", path]) }
        #expect(result.status == 0, "\(fixture): \(result.stdout) \(result.stderr)")
        let report = try #require(try result.jsonLines().first)
        #expect(report["decoded"] as? Bool == true, "\(fixture): \(result.stdout)")
        #expect(report["frames"] as? Int == source.frameCount && report["width"] as? Int == fixture.width)
        #expect(report["loopCount"] as? Int == source.loopCount)
    }

    /// `webimage fetch --thumbnail` (the coder reduces each frame) and `--resize` (the manager
    /// decodes and resizes a frame at a time; the whole animation was refused before).
    static func fetchThumbnail(_ fixture: Fixture, source: AnimationInfo, in folder: TemporaryDirectory) async throws {
        // The 4096² frames resized at full size take minutes in a debug build: thumbnailed only
        // (the two paths decode the same frames; the resize's peak was measured by hand).
        for operation in fixture.width > 2048 ? ["--thumbnail"] : ["--thumbnail", "--resize"] {
            let output = folder.file("out\(operation).webp")
            let run = try await CLIRunner.peakResidentMemory(
                // A debug build on a busy machine may need more than the default 10 s to decode.
                ["fetch", "--no-disk-cache", "--decode-timeout", "600", operation, "256x256", "-o", output.path]
                    + [folder.file(fixture.name).absoluteString]
            )
            #expect(run.status == 0, "\(fixture) \(operation)")
            let result = try AnimatedImage(data: Data(contentsOf: output))
            #expect(result.info.format == .webp)
            Self.expectResized(result.info, from: source, fixture)
            #expect(
                run.peakKiB < fixture.fetchLineMB * 1024,
                "\(fixture): webimage fetch \(operation) peaked at \(run.peakKiB / 1024) MB, line \(fixture.fetchLineMB) MB"
            )
        }
    }

    @Test("webimage fetch -o out.webp of a GIF converts it a frame at a time: the whole path's bytes, under its memory")
    func conversion() async throws {
        let folder = try TemporaryDirectory(prefix: "webimage-animation")
        defer { folder.remove() }
        // 512² × 160 frames: 168 MB decoded whole.
        let data = try await onOwnThread { GIFBuilder.checkerAnimation(width: 512, height: 512, frames: 160) }
        try data.write(to: folder.file("long.gif"))
        let output = folder.file("out.webp")
        let run = try await CLIRunner.peakResidentMemory(
            [
                "fetch", "--no-disk-cache", "--decode-timeout", "600", "-o", output.path,
                folder.file("long.gif").absoluteString,
            ]
        )
        #expect(run.status == 0)
        // The same bytes as the whole animation encoded at once (the CLI's default quality, 90).
        let expected = try await onOwnThread {
            let whole = try ImageCodersManager.shared.decode(data)
            return try ImageCodersManager.shared.encode(whole, as: .webp, options: ImageEncodingOptions(quality: 0.9))
        }
        #expect(try Data(contentsOf: output) == expected)
        let wholeBytes = 512 * 512 * 4 * 160
        #expect(
            run.peakKiB * 1024 < wholeBytes,
            "peaked at \(run.peakKiB / 1024) MB; the frames take \(wholeBytes >> 20) MiB"
        )
    }

    /// A server of its own, so its peak is this animation's.
    static func serveResize(
        _ fixture: Fixture,
        source: AnimationInfo,
        folder: TemporaryDirectory,
        cache: TemporaryDirectory
    ) async throws {
        // Frames summed, the 4096² one is 268 megapixels: checked a frame at a time instead.
        let server = try await RunningServer.start([
            "--bind", "127.0.0.1:0", "--insecure", "--json", "--local-root", folder.url.path,
            "--cache-dir", cache.url.path, "--workers", "1", "--max-animation-frame-resolution", "20",
            "--processing-timeout", "900",
        ])
        defer { if server.process.isRunning { _ = server.stop() } }
        // A debug build on a busy machine takes minutes over the 4096² frames.
        var configuration = HTTPSession.Configuration.default
        configuration.readTimeout = .seconds(900)
        configuration.requestTimeout = .seconds(900)
        let session = HTTPSession(configuration: configuration)
        do {
            try await Self.expectResized(fixture, source: source, by: server, session: session)
        } catch {
            try? await session.shutdown()
            throw error
        }
        try await session.shutdown()
        #expect(server.stop() == 0)
    }

    static func expectResized(
        _ fixture: Fixture,
        source: AnimationInfo,
        by server: RunningServer,
        session: HTTPSession
    ) async throws {
        let url = try #require(URL(string: server.url + "/_/rs:fit:256:256/plain/local:///\(fixture.name)"))
        let (body, response) = try await session.data(for: .init(url: url))
        #expect(response.statusCode == 200, "\(fixture): \(String(decoding: body.prefix(300), as: UTF8.self))")
        guard response.statusCode == 200 else { return }
        let result = try AnimatedImage(data: body).info
        #expect(result.format == fixture.format, "\(fixture): the source's format is kept")
        Self.expectResized(result, from: source, fixture)
        let peakKiB = try Self.peakResidentKiB(of: server.process.processIdentifier)
        #expect(
            peakKiB < fixture.serveLineMB * 1024,
            "\(fixture): the server peaked at \(peakKiB / 1024) MB, line \(fixture.serveLineMB) MB"
        )
    }

    /// A running process's peak resident memory (`VmHWM`, its own since `exec`), in KiB.
    static func peakResidentKiB(of pid: Int32) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") })
        return try #require(line.split(whereSeparator: \.isWhitespace).dropFirst().first.flatMap { Int($0) })
    }
}
