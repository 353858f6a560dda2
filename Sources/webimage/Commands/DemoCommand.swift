import ArgumentParser
import Foundation
import WebImage
import WebImageOrigin

/// `webimage demo`: the whole pipeline, offline, in a few seconds.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run the whole pipeline offline against a local origin.",
        discussion: """
            Generates a dozen images with our own encoders (JPEG baseline and progressive, PNG with \
            alpha, animated GIF, WebP; a few megapixels in all), serves them from an origin on \
            127.0.0.1, and loads them through ImageManager three times: cold (network, with a \
            progress bar and progressive previews), warm (memory hits) and after clearing memory \
            (disk hits). Prints a table, stops the origin and exits 0.

            Example:
              webimage demo
              webimage demo --json
            """
    )

    @OptionGroup var verbosity: Verbosity

    @Flag(help: "Print one JSON object per pass on standard output.")
    var json = false

    @Flag(name: .customLong("no-progress"), help: "Do not draw the progress bar.")
    var noProgress = false

    @Option(
        name: .customLong("cache-dir"),
        help: "Disk cache folder (default: a temporary folder, removed at the end)."
    )
    var cacheDirectory: String?

    struct Pass: Sendable {
        var name: String
        var images = 0
        var bytes = 0
        var milliseconds = 0.0
        var cacheTypes: [String: Int] = [:]
        var originRequests = 0
        var previews = 0
        var failures: [String] = []
    }

    func validate() throws { try LoadingOptions.validateCacheDirectory(cacheDirectory) }

    func run() async throws {
        let images = try DemoImages.make()
        let origin = try await Self.serve(images)
        let temporary = FileManager.default.temporaryDirectory.appendingPathComponent(
            "webimage-demo-\(UUID().uuidString)"
        )
        let folder = cacheDirectory.map { URL(fileURLWithPath: $0, isDirectory: true) } ?? temporary
        defer { if cacheDirectory == nil { try? FileManager.default.removeItem(at: temporary) } }
        let (manager, cache) = await Self.makeManager(caching: folder)
        let urls = images.map { origin.url("/demo/\($0.name)") }
        let totalBytes = images.reduce(0) { $0 + $1.data.count }
        if !json {
            StandardStream.line(
                "Serving \(images.count) generated images (\(totalBytes / 1024) KB) from \(origin.url("/demo/"))"
            )
        }
        let passes = await runPasses(urls, manager: manager, cache: cache, origin: origin)
        await origin.stop()
        report(passes)
        let failures = passes.flatMap(\.failures)
        if !failures.isEmpty {
            for failure in failures { Diagnostics.write("demo: \(failure)") }
            throw ItemsFailed()
        }
    }

    /// An origin on loopback serving `images` under `/demo/` (the dripping ones in 16 KiB chunks).
    private static func serve(_ images: [DemoImage]) async throws -> OriginServer {
        let origin = try await OriginServer.start()
        for image in images {
            let behavior =
                image.drip
                ? OriginRoute.Behavior(chunkSize: 16 * 1024, chunkInterval: .milliseconds(4)) : OriginRoute.Behavior()
            origin.setRoute(
                "/demo/\(image.name)",
                .data(image.data, contentType: image.contentType, cacheControl: "max-age=86400", behavior: behavior)
            )
        }
        return origin
    }

    /// A manager over an emptied cache in `folder`, logging as `--verbose` says.
    private static func makeManager(caching folder: URL) async -> (ImageManager, ImageCache) {
        var configuration = ImageCache.Configuration()
        configuration.cleanupInterval = nil
        configuration.logger = Verbosity.logger("cache")
        let cache = ImageCache(directory: folder, configuration: configuration)
        await cache.clear()
        var downloaderConfiguration = ImageDownloader.Configuration()
        downloaderConfiguration.logger = Verbosity.logger("downloader")
        var managerConfiguration = ImageManager.Configuration()
        managerConfiguration.logger = Verbosity.logger("manager")
        let manager = ImageManager(
            cache: cache,
            loader: ImageDownloader(configuration: downloaderConfiguration),
            configuration: managerConfiguration
        )
        return (manager, cache)
    }

    /// The three passes: cold (every image twice at once: the second caller shares the first's
    /// download), warm (memory), and disk once memory is cleared.
    private func runPasses(
        _ urls: [URL],
        manager: ImageManager,
        cache: ImageCache,
        origin: OriginServer
    ) async -> [Pass] {
        var passes: [Pass] = []
        let progress = !noProgress && !json
        passes.append(
            await load("cold (network)", urls: urls + urls, manager: manager, origin: origin, progress: progress)
        )
        passes.append(await load("warm (memory)", urls: urls, manager: manager, origin: origin, progress: false))
        // Every load of the passes before has ended (its stores made) and the disk writes have
        // landed before memory is cleared: nothing from them can put an image back.
        let settled = ContinuousClock.now + .seconds(10)
        while manager.isRunning, ContinuousClock.now < settled { try? await Task.sleep(for: .milliseconds(5)) }
        await manager.flush()
        cache.clearMemory()
        passes.append(
            await load("memory cleared (disk)", urls: urls, manager: manager, origin: origin, progress: false)
        )
        return passes
    }

    /// The passes as JSON lines or a table with the request counts.
    private func report(_ passes: [Pass]) {
        guard !json else {
            for pass in passes {
                JSONLineWriter.write(
                    .object([
                        ("pass", .string(pass.name)), ("images", .int(pass.images)), ("bytes", .int(pass.bytes)),
                        ("ms", .double(pass.milliseconds)),
                        (
                            "cacheTypes",
                            .object(pass.cacheTypes.sorted { $0.key < $1.key }.map { ($0.key, .int($0.value)) })
                        ),
                        ("originRequests", .int(pass.originRequests)), ("previews", .int(pass.previews)),
                        ("failed", .int(pass.failures.count)),
                    ])
                )
            }
            return
        }
        printTable(passes)
        StandardStream.line("")
        StandardStream.line(
            "Each image was asked for twice in the cold pass: \(passes[0].images) loads made \(passes[0].originRequests) origin requests."
        )
        StandardStream.line(
            "The warm and disk passes reached the origin \(passes[1].originRequests + passes[2].originRequests) times."
        )
    }

    private func load(
        _ name: String,
        urls: [URL],
        manager: ImageManager,
        origin: OriginServer,
        progress: Bool
    ) async -> Pass {
        let before = origin.requests.count
        let bar = ProgressBar(total: urls.count, requested: progress)
        let clock = ContinuousClock()
        let start = clock.now
        let results = await withTaskGroup(of: (ImageCacheType?, Int, Int, String?).self) { group in
            for url in urls {
                group.addTask {
                    var previews = 0
                    do {
                        for try await event in manager.images(with: url, options: .progressiveLoad) {
                            switch event {
                            case .partial: previews += 1
                            case .image(let result):
                                bar.advance()
                                return (result.cacheType, result.data?.count ?? 0, previews, nil)
                            case .progress, .info: break
                            }
                        }
                        return (nil, 0, previews, "\(url): no image")
                    } catch {
                        bar.advance()
                        return (nil, 0, previews, "\(error)")
                    }
                }
            }
            var all: [(ImageCacheType?, Int, Int, String?)] = []
            for await result in group { all.append(result) }
            return all
        }
        bar.close()
        var pass = Pass(name: name)
        pass.milliseconds =
            Double((clock.now - start).components.attoseconds) / 1e15
            + Double((clock.now - start).components.seconds) * 1000
        for (cacheType, bytes, previews, failure) in results {
            pass.images += 1
            pass.bytes += bytes
            pass.previews += previews
            if let failure { pass.failures.append(failure) }
            if let cacheType { pass.cacheTypes[cacheType == .none ? "network" : cacheType.rawValue, default: 0] += 1 }
        }
        pass.originRequests = origin.requests.count - before
        return pass
    }

    private func printTable(_ passes: [Pass]) {
        let header = ["pass", "images", "bytes", "time", "from", "origin requests", "previews"]
        let rows = passes.map { pass in
            [
                pass.name, "\(pass.images)", pass.bytes == 0 ? "-" : "\(pass.bytes / 1024) KB",
                String(format: "%.1f ms", pass.milliseconds),
                pass.cacheTypes.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "),
                "\(pass.originRequests)", "\(pass.previews)",
            ]
        }
        let widths = header.indices.map { column in ([header] + rows).map { $0[column].count }.max() ?? 0 }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { index, cell in
                index == 0
                    ? cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
                    : String(repeating: " ", count: widths[index] - cell.count) + cell
            }.joined(separator: "  ")
        }
        StandardStream.line(line(header))
        StandardStream.line(widths.map { String(repeating: "-", count: $0) }.joined(separator: "  "))
        for row in rows { StandardStream.line(line(row)) }
    }
}
