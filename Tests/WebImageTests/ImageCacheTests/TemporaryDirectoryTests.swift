import Foundation
import Testing
import WebImage
import WebImageTestSupport

@Suite("Test folders: none is left behind", .timeLimit(.minutes(1)))
struct TemporaryDirectoryTests {
    /// A cache's write after a test removed its folder puts the folder back (as a cache should);
    /// the folder is removed again when the test process exits. The write and the exit happen in
    /// a child process, which names the folder on standard error.
    @Test("A folder a cache's late write put back is gone once the process exits")
    func lateWriteFolderRemovedAtExit() async throws {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            do {
                let folder = try TemporaryDirectory()
                let cache = CacheFixtures.cache(folder)
                folder.remove()
                try await cache.store(
                    CacheFixtures.pngImage,
                    data: CacheFixtures.png,
                    forKey: "https://example.com/late.png"
                )
                await cache.flush()
                let back = FileManager.default.fileExists(atPath: folder.url.path)
                FileHandle.standardError.write(Data("\(back ? "back" : "absent") \(folder.url.path)".utf8))
            } catch {
                FileHandle.standardError.write(Data("failed: \(error)".utf8))
            }
        }
        let report = result.map { String(decoding: $0.standardErrorContent, as: UTF8.self) } ?? ""
        let line = try #require(report.split(separator: "\n").last.map(String.init), "the child said nothing")
        // The cache put the folder back in the child: the case the exit's removal is for.
        #expect(line.hasPrefix("back /"), "the child said: \(report)")
        let path = String(line.drop { $0 != "/" })
        #expect(!path.isEmpty && !FileManager.default.fileExists(atPath: path), "\(path) outlived its process")
    }
}
