import ArgumentParser
import Foundation

/// `webimage-soak`: many loads through `ImageManager` against a local origin, with random
/// cancellations and small cache limits; reports memory, descriptors, errors and leaks.
@main
struct SoakCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webimage-soak",
        abstract: "Soak ImageManager: many loads, random cancellations, small caches; check for leaks.",
        discussion: """
            Starts a local origin on 127.0.0.1 serving generated JPEG, PNG, GIF and WebP images \
            (plus a few URLs that fail: 404, corrupt data, truncated bodies), then runs the loads \
            through one ImageManager. Exits 0 when no load failed unexpectedly, every load completed \
            exactly once, and no task, connection or file handle outlived the run.

            Example: swift run -c release webimage-soak --loads 50000 --json
            """
    )

    @Option(help: "Loads to run.")
    var loads = 50_000

    @Option(help: "Loads in flight at once.")
    var concurrency = 64

    @Option(name: .customLong("images"), help: "Distinct image URLs (the working set).")
    var imageCount = 2_000

    @Option(name: .customLong("cancel-rate"), help: "Share of loads cancelled after a random 0-3 ms.")
    var cancelRate = 0.2

    @Option(name: .customLong("failure-rate"), help: "Share of loads sent to URLs that fail.")
    var failureRate = 0.03

    @Option(name: .customLong("memory-mib"), help: "Memory cache cost limit, in MiB.")
    var memoryMiB = 8

    @Option(name: .customLong("disk-mib"), help: "Disk cache size limit, in MiB.")
    var diskMiB = 32

    @Option(help: "Seed of the random choices (the same seed makes the same choices).")
    var seed: UInt64 = 1

    @Flag(help: "Print the report as one JSON object.")
    var json = false

    func validate() throws {
        guard loads > 0 else { throw ValidationError("--loads must be at least 1, got \(loads)") }
        guard concurrency > 0 else { throw ValidationError("--concurrency must be at least 1, got \(concurrency)") }
        guard imageCount > 0 else { throw ValidationError("--images must be at least 1, got \(imageCount)") }
        for (name, rate) in [("--cancel-rate", cancelRate), ("--failure-rate", failureRate)]
        where !(0...1).contains(rate) {
            throw ValidationError("\(name) must be between 0 and 1, got \(rate)")
        }
        for (name, mebibytes) in [("--memory-mib", memoryMiB), ("--disk-mib", diskMiB)] where mebibytes <= 0 {
            throw ValidationError("\(name) must be at least 1, got \(mebibytes)")
        }
    }

    func run() async throws {
        let settings = SoakSettings(
            loads: loads,
            concurrency: concurrency,
            imageCount: imageCount,
            cancelRate: cancelRate,
            failureRate: failureRate,
            memoryLimit: memoryMiB << 20,
            diskLimit: diskMiB << 20,
            seed: seed
        )
        let report = try await SoakRun(settings: settings).run { line in
            if !json { FileHandle.standardError.write(Data((line + "\n").utf8)) }
        }
        print(json ? report.json : report.text)
        if !report.passed { throw ExitCode(1) }
    }
}
