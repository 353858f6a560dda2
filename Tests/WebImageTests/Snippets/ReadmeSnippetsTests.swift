import Foundation
import Testing

@Suite("README snippets")
struct ReadmeSnippetsTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    @Test(
        "Every Swift block of the README and MIGRATING.md is compiled code from its snippets file",
        arguments: [("README.md", "ReadmeSnippets.swift", 5), ("MIGRATING.md", "MigratingSnippets.swift", 12)]
    )
    func snippetsCompile(document: String, snippets: String, minimumBlocks: Int) throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent(document), encoding: .utf8)
        let source = try String(
            contentsOf: Self.root.appendingPathComponent("Tests/WebImageTests/Snippets/\(snippets)"),
            encoding: .utf8
        )
        let sourceLines = source.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        var blocks: [[String]] = []
        var current: [String]?
        for line in readme.split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil, line.hasPrefix("```swift") {
                current = []
            } else if current != nil, line.hasPrefix("```") {
                blocks.append(current!)
                current = nil
            } else if current != nil {
                let trimmed = line.trimmingCharacters(in: .whitespaces)
                if !trimmed.isEmpty { current!.append(trimmed) }
            }
        }
        #expect(blocks.count >= minimumBlocks)
        for (index, block) in blocks.enumerated() {
            var position = 0
            for line in block {
                guard let found = sourceLines[position...].firstIndex(of: line) else {
                    Issue.record("\(document) Swift block \(index + 1): '\(line)' is not in \(snippets) (in order)")
                    break
                }
                position = found + 1
            }
        }
    }
}
