import Foundation
import Testing
import WebImageTestSupport

@Suite("scripts/install.sh")
struct InstallTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Runs bash with `arguments`, waiting on a thread of its own (not the cooperative pool).
    static func shell(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        try await onOwnThread {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/bash")
            process.arguments = arguments
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = pipe
            try process.run()
            let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            return (process.terminationStatus, output)
        }
    }

    @Test("Installs the tool, bash/zsh/fish completions and a man page made from the parser")
    func install() async throws {
        let prefix = try TemporaryDirectory(prefix: "webimage-install")
        defer { prefix.remove() }
        let script = Self.repository.appendingPathComponent("scripts/install.sh").path
        let result = try await Self.shell([script, "--prefix", prefix.url.path, "--binary", CLIRunner.executable.path])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("export PATH=\"\(prefix.url.path)/bin:$PATH\""), "says how to reach it")
        let installed = prefix.file("bin/webimage")
        #expect(FileManager.default.isExecutableFile(atPath: installed.path))
        let version = try await CLIRunner.runDetached(["--version"])
        #expect(try await Self.shell(["-c", "'\(installed.path)' --version"]).output == version.stdout)

        let bash = prefix.file("share/bash-completion/completions/webimage")
        let bashScript = try String(contentsOf: bash, encoding: .utf8)
        #expect(
            bashScript.contains("fetch") && bashScript.contains("--thumbnail")
                && bashScript.contains("--output-template")
        )
        #expect(try await Self.shell(["-n", bash.path]).status == 0, "the bash completion parses")
        #expect(
            try String(contentsOf: prefix.file("share/zsh/site-functions/_webimage"), encoding: .utf8).contains(
                "#compdef webimage"
            )
        )
        #expect(
            try String(contentsOf: prefix.file("share/fish/vendor_completions.d/webimage.fish"), encoding: .utf8)
                .contains("webimage")
        )

        let manual = try String(contentsOf: prefix.file("share/man/man1/webimage.1"), encoding: .utf8)
        #expect(manual.hasPrefix(".TH WEBIMAGE 1"))
        for expected in [
            ".SH EXIT STATUS", "8 HTTP status", ".SS webimage fetch", ".SS webimage cache trim", "output-template",
        ] {
            #expect(manual.contains(expected), "the man page has \(expected)")
        }
        let refused = try await Self.shell([script, "--bogus"])
        #expect(refused.status == 2 && refused.output.contains("unknown argument '--bogus'"))
    }
}
