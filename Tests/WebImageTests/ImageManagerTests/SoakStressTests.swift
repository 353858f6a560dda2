import Foundation
import Testing
import WebImageTestSupport

/// A short `webimage-soak` run: the full 50,000-load run is a documented command, not CI, but
/// its checks (no unexpected failure, one completion per load, no leaked operation, task,
/// socket or file) hold for any length.
@Suite("Stress: webimage-soak (also run under ThreadSanitizer)", .timeLimit(.minutes(3)))
struct SoakStressTests {
    @Test("A short soak passes its leak and error checks")
    func shortSoak() async throws {
        // The soak runs for a while: waiting for it on a thread of its own keeps the pool free.
        let (status, data) = try await onOwnThread {
            let process = Process()
            process.executableURL = StressProcess.helper("webimage-soak")
            process.arguments = ["--loads", "600", "--images", "80", "--concurrency", "16", "--seed", "7", "--json"]
            let output = Pipe()
            process.standardOutput = output
            process.standardError = FileHandle.standardError
            try process.run()
            let data = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return (process.terminationStatus, data)
        }
        let report = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(status == 0, "\(report["problems"] ?? "")")
        #expect(report["passed"] as? Bool == true)
        #expect(report["loads"] as? Int == 600)
        #expect(report["unexpected"] as? Int == 0 && report["hung"] as? Int == 0)
        #expect(report["extraCompletions"] as? Int == 0)
        #expect(report["liveLoadOperations"] as? Int == 0 && report["liveDownloadOperations"] as? Int == 0)
        #expect(report["liveHTTPTasks"] as? Int == 0 && report["leakedSockets"] as? Int == 0)
        #expect(report["openCacheFiles"] as? Int == 0)
        // The mix really ran: downloads, hits, cancellations and the failing URLs.
        for key in ["network", "memoryHits", "diskHits", "cancelled", "expectedFailures"] {
            #expect((report[key] as? Int ?? 0) > 0, "\(key)")
        }
    }

    @Test("Bad arguments exit 64 (EX_USAGE) and name the option")
    func usage() async throws {
        for arguments in [["--loads", "0"], ["--cancel-rate", "1.5"], ["--memory-mib", "0"]] {
            let (status, message) = try await onOwnThread {
                let process = Process()
                process.executableURL = StressProcess.helper("webimage-soak")
                process.arguments = arguments
                let errors = Pipe()
                process.standardError = errors
                process.standardOutput = Pipe()
                try process.run()
                let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                process.waitUntilExit()
                return (process.terminationStatus, message)
            }
            #expect(status == 64, "\(arguments)")  // EX_USAGE, ArgumentParser's usage status
            #expect(message.contains(arguments[0]), "\(message)")
        }
    }
}
