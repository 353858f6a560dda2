import Foundation

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

    /// Runs the binary on a dispatch thread, so waiting for it never occupies the cooperative
    /// pool that an in-process origin server needs to answer it.
    static func runDetached(
        _ arguments: [String],
        environment: [String: String]? = nil,
        addressSpaceLimitKiB: Int? = nil,
        in directory: URL? = nil,
        input: Data? = nil
    ) async throws -> Result {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(
                    with: Swift.Result<CLIRunner.Result, any Error> {
                        try run(
                            arguments,
                            environment: environment,
                            addressSpaceLimitKiB: addressSpaceLimitKiB,
                            in: directory,
                            input: input
                        )
                    }
                )
            }
        }
    }

    /// Runs the binary; with `addressSpaceLimitKiB`, under that `ulimit -v`, so an allocation
    /// past it fails the run.
    static func run(
        _ arguments: [String],
        environment: [String: String]? = nil,
        addressSpaceLimitKiB: Int? = nil,
        in directory: URL? = nil,
        input: Data? = nil
    ) throws -> Result {
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
            DispatchQueue.global().async {
                try? writer.write(contentsOf: input)
                try? writer.close()
            }
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
        return try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(
                    with: Swift.Result<CLIRunner.Result, any Error> {
                        try process.run()
                        let data = out.fileHandleForReading.readDataToEndOfFile()
                        process.waitUntilExit()
                        return Result(
                            status: process.terminationStatus,
                            stdout: String(decoding: data, as: UTF8.self),
                            stderr: ""
                        )
                    }
                )
            }
        }
    }
}
