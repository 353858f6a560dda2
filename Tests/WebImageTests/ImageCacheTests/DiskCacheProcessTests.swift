import Foundation
import Testing
import WebImage
import WebImageTestSupport

/// Runs `webimage-cache-stress` (built beside the tests) as a child process.
enum StressProcess {
    static var executable: URL { helper("webimage-cache-stress") }

    /// A helper executable of this package, built beside the test bundle.
    static func helper(_ name: String) -> URL {
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(".build/debug/\(name)")
    }

    static func start(_ directory: URL, first: Int, count: Int, rounds: Int? = nil) throws -> (Process, Pipe) {
        let process = Process()
        process.executableURL = executable
        process.arguments = [directory.path, "\(first)", "\(count)"] + (rounds.map { ["\($0)"] } ?? [])
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.standardError
        try process.run()
        return (process, output)
    }

    /// Every entry in `cache` is whole: its bytes are exactly what its key produces.
    static func verifyWhole(_ cache: DiskCache) -> (entries: Int, torn: [String]) {
        var torn: [String] = []
        let entries = cache.entries()
        for entry in entries {
            if cache.data(forKey: entry.key) != CacheStressPayload.bytes(forKey: entry.key) { torn.append(entry.key) }
        }
        return (entries.count, torn)
    }
}

@Suite("DiskCache across processes", .serialized, .timeLimit(.minutes(2)))
struct DiskCacheProcessTests {
    @Test("A writer killed with SIGKILL mid-write leaves every entry whole or absent")
    func killedWriter() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        for attempt in 0..<5 {
            let (process, output) = try StressProcess.start(folder.url, first: attempt * 1000, count: 200)
            // Wait for the first entry, then let it write for a moment and kill it.
            let reading = output.fileHandleForReading
            _ = try await onOwnThread { reading.availableData }  // not on the pool: the child may be slow to start
            try await Task.sleep(for: .milliseconds(20 + attempt * 30))
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            #expect(process.terminationReason == .uncaughtSignal)
        }
        let cache = DiskCache(directory: folder.url)
        // Seconds of payload hashing in a debug build: off the pool.
        let (entries, torn) = try await onOwnThread { StressProcess.verifyWhole(cache) }
        #expect(entries >= 5)
        #expect(torn.isEmpty, "torn entries: \(torn)")
        // Whatever the kills left half-written is a temporary file, not an entry.
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.url.path)
        #expect(files.filter { !$0.hasPrefix(".tmp-") }.count == entries)
    }

    @Test("Two processes writing the same keys, and this one reading, never see a torn entry")
    func twoWriters() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let a = try StressProcess.start(folder.url, first: 0, count: 40, rounds: 3)
        let b = try StressProcess.start(folder.url, first: 20, count: 40, rounds: 3)
        let cache = DiskCache(directory: folder.url)
        var reads = 0
        while a.0.isRunning || b.0.isRunning {
            for index in 0..<60 {
                let key = CacheStressPayload.key(index)
                if let data = cache.data(forKey: key) {
                    #expect(data == CacheStressPayload.bytes(forKey: key))
                    reads += 1
                }
            }
            try await Task.sleep(for: .milliseconds(1))
        }
        a.0.waitUntilExit()
        b.0.waitUntilExit()
        #expect(a.0.terminationStatus == 0)
        #expect(b.0.terminationStatus == 0)
        // Seconds of payload hashing in a debug build: off the pool.
        let (entries, torn) = try await onOwnThread { StressProcess.verifyWhole(cache) }
        #expect(entries == 60)
        #expect(torn.isEmpty)
        #expect(reads > 0)
    }
}
