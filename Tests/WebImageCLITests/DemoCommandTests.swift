import Foundation
import Testing

@Suite("webimage demo", .timeLimit(.minutes(2)))
struct DemoCommandTests {
    @Test("The demo runs offline: network once per image, then memory, then disk hits; exit 0")
    func demo() async throws {
        let result = try await CLIRunner.runDetached(["demo", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let passes = try result.jsonLines()
        #expect(passes.count == 3)
        guard passes.count == 3 else { return }
        #expect(passes.map { $0["failed"] as? Int } == [0, 0, 0])
        #expect(passes[0]["images"] as? Int == 24)
        #expect(passes[0]["originRequests"] as? Int == 12)  // each image asked twice, loaded once
        #expect((passes[0]["cacheTypes"] as? [String: Int])?["network"] == 24)
        #expect((passes[1]["cacheTypes"] as? [String: Int])?["memory"] == 12)
        #expect(passes[1]["originRequests"] as? Int == 0)
        #expect((passes[2]["cacheTypes"] as? [String: Int])?["disk"] == 12)
        #expect(passes[2]["originRequests"] as? Int == 0)
        #expect((passes[0]["bytes"] as? Int ?? 0) > 1_000_000)
    }

    @Test("Every subcommand's --help shows an example, and its prose is wrapped by the parser")
    func help() async throws {
        for command in [
            "info", "fetch", "prefetch", "demo", "serve", "cache", "cache stats", "cache clear", "cache trim",
            "cache ls",
        ] {
            let result = try await CLIRunner.runDetached(command.split(separator: " ").map(String.init) + ["--help"])
            #expect(result.status == 0, "\(command)")
            #expect(
                result.stdout.contains("webimage \(command.split(separator: " ")[0])"),
                "\(command) help has an example"
            )
            #expect(result.stdout.contains("Example"), "\(command)")
            for problem in Self.proseProblems(in: result.stdout) { Issue.record("\(command) --help: \(problem)") }
        }
    }

    /// Lines of the help's prose (from the top to "Example:" or "USAGE:") that end where the
    /// parser would not have ended them: a stray backslash, or a break with room for the next
    /// word (a hard line break in the source). Printed to a pipe, the parser fills lines to at
    /// most 79 characters (80 columns).
    static func proseProblems(in help: String) -> [String] {
        let lines = help.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let prose = lines.prefix { !$0.hasPrefix("Example:") && !$0.hasPrefix("USAGE:") }
        var problems: [String] = []
        for (line, next) in zip(prose, prose.dropFirst()) {
            if line.contains("\\") { problems.append("a backslash in \"\(line)\"") }
            guard !line.isEmpty, let word = next.split(separator: " ").first, !next.hasPrefix(" ") else { continue }
            if line.count + 1 + word.count <= 79 { problems.append("a hard break after \"\(line)\"") }
        }
        return problems
    }
}
