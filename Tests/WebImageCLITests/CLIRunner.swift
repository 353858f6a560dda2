import Foundation
import WebImageTestSupport

/// Runs the built `webimage` binary and captures what it prints.
struct CLIRunner {
    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String

        /// stdout split into JSON objects, one per line.
        func jsonLines() throws -> [[String: Any]] {
            try stdout.split(separator: "\n").map { line in
                guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                    throw CocoaError(.propertyListReadCorrupt)
                }
                return object
            }
        }
    }

    /// The `webimage` executable beside the test bundle (SwiftPM builds it for this test target).
    static var executable: URL {
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("webimage")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        // Fall back to the package's own build folder.
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".build/debug/webimage")
    }

    /// Runs the binary on a thread of its own, so waiting for it never occupies the cooperative
    /// pool that an in-process origin server needs to answer it (on Linux, `DispatchQueue.global()`
    /// shares that pool's threads).
    static func runDetached(
        _ arguments: [String],
        environment: [String: String]? = nil,
        addressSpaceLimitKiB: Int? = nil,
        in directory: URL? = nil,
        input: Data? = nil,
        program: URL? = nil
    ) async throws -> Result {
        try await onOwnThread {
            try run(
                arguments,
                environment: environment,
                addressSpaceLimitKiB: addressSpaceLimitKiB,
                in: directory,
                input: input,
                program: program
            )
        }
    }

    /// Runs the binary with its output discarded and returns its exit status and peak resident
    /// memory in KiB, as GNU time (`/usr/bin/time`, Debian's `time`) reports it.
    ///
    /// Not `wait4`'s `ru_maxrss` of a child spawned from here: `posix_spawn` (vfork) and `fork`
    /// both start the child on this process's memory, and at `exec` Linux folds that memory's
    /// high-water mark into the child's `ru_maxrss`, so the figure was this test process's peak
    /// whenever that was the larger (256 MB in a full codec pass, for a run that peaked at 92).
    /// GNU time forks from its own small process, so the child's figure is its own.
    static func peakResidentMemory(_ arguments: [String]) async throws -> (status: Int32, peakKiB: Int) {
        let timeTool = "/usr/bin/time"
        guard FileManager.default.isExecutableFile(atPath: timeTool) else {
            throw CocoaError(
                .fileNoSuchFile,
                userInfo: [
                    NSLocalizedDescriptionKey: "\(timeTool) is missing: install Debian's `time` (scripts/test.sh does)"
                ]
            )
        }
        let folder = try TemporaryDirectory(prefix: "webimage-peak")
        defer { folder.remove() }
        let report = folder.file("peak-kib")
        let run = try await runDetached(
            ["-f", "%M", "-o", report.path, executable.path] + arguments,
            program: URL(fileURLWithPath: timeTool)
        )
        let text = try String(contentsOf: report, encoding: .utf8)
        // With a failed command, GNU time writes "Command exited with non-zero status N" first.
        guard let peakKiB = text.split(separator: "\n").last.flatMap({ Int($0.trimmingCharacters(in: .whitespaces)) })
        else {
            throw CocoaError(
                .fileReadCorruptFile,
                userInfo: [NSLocalizedDescriptionKey: "\(timeTool) reported no peak memory: \(text)"]
            )
        }
        return (run.status, peakKiB)
    }

    /// Runs the binary (or `program`, such as a script); with `addressSpaceLimitKiB`, under that
    /// `ulimit -v`, so an allocation past it fails the run.
    static func run(
        _ arguments: [String],
        environment: [String: String]? = nil,
        addressSpaceLimitKiB: Int? = nil,
        in directory: URL? = nil,
        input: Data? = nil,
        program: URL? = nil
    ) throws -> Result {
        let executable = program ?? Self.executable
        let process = Process()
        process.currentDirectoryURL = directory
        if let addressSpaceLimitKiB {
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments =
                ["-c", "ulimit -v \(addressSpaceLimitKiB) && exec \"$0\" \"$@\"", executable.path] + arguments
        } else {
            process.executableURL = executable
            process.arguments = arguments
        }
        if let environment {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let stdin = Pipe()
        process.standardInput = input == nil ? FileHandle.nullDevice : stdin
        try process.run()
        if let input {
            // Written from another thread, so a child that reads slowly cannot block the reads below;
            // a child that stops reading early must not kill this process with SIGPIPE.
            signal(SIGPIPE, SIG_IGN)
            let writer = stdin.fileHandleForWriting
            Thread {
                try? writer.write(contentsOf: input)
                try? writer.close()
            }.start()
        }
        // Read both pipes before waiting so a full pipe cannot block the child.
        let stdoutData = out.fileHandleForReading.readDataToEndOfFile()
        let stderrData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(
            status: process.terminationStatus,
            stdout: String(decoding: stdoutData, as: UTF8.self),
            stderr: String(decoding: stderrData, as: UTF8.self)
        )
    }

    /// Runs the binary with a pseudo-terminal as its standard output and error (util-linux
    /// `script`): `stdout` is everything the terminal received, both streams interleaved, with
    /// the terminal's `\r\n` line ends.
    static func runOnTerminal(_ arguments: [String]) async throws -> Result {
        let quoted = ([executable.path] + arguments).map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/script")
        process.arguments = ["--quiet", "--return", "--flush", "--command", quoted.joined(separator: " "), "/dev/null"]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        return try await onOwnThread {
            try process.run()
            let data = out.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return Result(status: process.terminationStatus, stdout: String(decoding: data, as: UTF8.self), stderr: "")
        }
    }
}
