import ArgumentParser
import Foundation
import WebImage
@_spi(WebImageInternals) import WebImageCoders

/// `webimage prefetch URL...`: warms the caches.
struct PrefetchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prefetch",
        abstract: "Warm the caches with a list of URLs.",
        discussion: """
            Loads every URL into the memory and disk caches through ImagePrefetcher, names each \
            URL that failed (a JSON line with --json, a line on standard error otherwise), and \
            prints one summary: finished (loaded and cached now), skipped (already cached: \
            nothing loaded), failed; the three add up to the URLs given.

            \(ExitStatus.summary)

            Example:
              webimage prefetch --json --progress --input urls.txt
            """
    )

    @OptionGroup var loading: LoadingOptions

    @Option(
        name: .customLong("input"),
        help: "A file with one URL a line, '-' for standard input (blank lines and # comments are ignored)."
    )
    var inputFile: String?

    @Option(help: "Loads at once.")
    var concurrency = 3

    @Argument(help: "URLs to prefetch.")
    var urls: [String] = []

    func validate() throws {
        guard concurrency > 0 else { throw ValidationError("--concurrency must be at least 1, got \(concurrency)") }
        try LoadingOptions.validateInputFile(inputFile)
        if urls.isEmpty && inputFile == nil { throw ValidationError("give at least one URL or --input FILE") }
    }

    func run() async throws {
        let inputs = try LoadingOptions.inputs(urls, listedIn: inputFile)
        let manager = try loading.makeManager()
        let prefetcher = ImagePrefetcher(manager: manager)
        prefetcher.maxConcurrentPrefetchCount = concurrency
        var options = loading.imageOptions
        options.insert(.lowPriority)
        var context = ImageContext()
        context.maxDecodeDuration = .seconds(loading.decodeTimeout)
        let bar = ProgressBar(total: inputs.count, requested: loading.showsProgress)
        let (counts, failures) = await withHandOffContinuation { continuation in
            let token = prefetcher.prefetchURLs(
                inputs.map { $0.isEmpty ? nil : URL(string: $0) },
                options: options,
                context: context,
                progress: { _, _ in bar.advance() }
            )
            token.onEnd { continuation.resume(returning: ($0, token.failures)) }
        }
        bar.close()
        // Every load waited for its disk write; this only covers writes still queued by others.
        await manager.flush()
        // Each failure, in input order, before the summary: which URL and why.
        for failure in failures.sorted(by: { $0.index < $1.index }) {
            let input = inputs[failure.index]
            if loading.json {
                JSONLineWriter.write(
                    .object([
                        ("url", .string(input)), ("ok", .bool(false)),
                        ("error", FetchReport.errorJSON(failure.error)),
                    ])
                )
            } else {
                Diagnostics.write("\(input.isEmpty ? "(empty)" : input): error: \(failure.error.message)")
            }
        }
        let failed = counts.failed
        // Disjoint: finished (loaded now) + skipped (already cached) + failed = the URLs given.
        let loaded = counts.finished - failed - counts.cached
        let summary = JSONValue.object([
            ("finished", .int(loaded)), ("skipped", .int(counts.cached)), ("failed", .int(failed)),
        ])
        if loading.json {
            JSONLineWriter.write(summary)
        } else {
            StandardStream.line(
                "finished \(loaded), skipped \(counts.cached) (already cached), failed \(failed)"
            )
        }
        if failed > 0 { throw ItemsFailed(kinds: failures.map { FailureKind($0.error) }) }
    }
}
