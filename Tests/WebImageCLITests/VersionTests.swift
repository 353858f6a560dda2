import Foundation
import Testing
import WebImageCoders
import WebImageTestSupport

@Suite("webimage --version")
struct VersionTests {
    @Test("--version names the tool and every codec library with the version it runs with")
    func version() async throws {
        let result = try await CLIRunner.runDetached(["--version"])
        #expect(result.status == 0 && result.stderr.isEmpty)
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first?.hasPrefix("webimage ") == true)
        let names = ["libjpeg-turbo", "libpng", "giflib", "libwebp", "libavif", "libheif", "libjxl", "lcms2"]
        #expect(CodecLibrary.all.map(\.name) == names)
        for name in names {
            let line = try #require(lines.first { $0.hasPrefix(name + " ") }, "no line for \(name)")
            let version = line.dropFirst(name.count + 1)
            #expect(version.first?.isNumber == true && version.contains("."), "\(line)")
        }
        // libavif names the AV1 codecs it was built with; decoding needs one.
        #expect(lines.first { $0.hasPrefix("libavif ") }?.contains("dec]") == true)
    }

    @Test("libavif, libheif and libjxl load only when a fetch needs one (glibc's LD_DEBUG=files)")
    func codecLibrariesLoadOnFirstUse() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("webimage-lazy-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let png = folder.appendingPathComponent("in.png")
        try FetchCommandTests.png.write(to: png)
        /// The codec libraries the dynamic loader opened during one run, by their base names.
        func loaded(_ arguments: [String]) throws -> Set<String> {
            let result = try CLIRunner.run(arguments, environment: ["LD_DEBUG": "files"])
            #expect(result.status == 0, "\(arguments): \(result.stderr.suffix(400))")
            let names = ["libavif", "libheif", "libjxl"]
            return Set(names.filter { result.stderr.contains("file=\($0).so") })
        }
        let toWebP = ["fetch", "--quiet", "--no-disk-cache", "--format", "webp", "-o", folder.path + "/out.webp"]
        #expect(try loaded(toWebP + [png.absoluteString]) == [])
        let toAVIF = ["fetch", "--quiet", "--no-disk-cache", "--format", "avif", "-o", folder.path + "/out.avif"]
        #expect(try loaded(toAVIF + [png.absoluteString]) == ["libavif"])
        let written = try Data(contentsOf: folder.appendingPathComponent("out.avif"))
        let decoded = try ImageCodersManager.shared.decode(written, options: ImageDecodingOptions())
        #expect(
            decoded.format == .avif && decoded.frames[0].bitmap.width == 48 && decoded.frames[0].bitmap.height == 32
        )
    }
}
