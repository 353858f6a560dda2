import Foundation
import Testing
import WebImageCoders

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
}
