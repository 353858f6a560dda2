import Foundation
import Synchronization
import WebImage
@_spi(WebImageInternals) import WebImageCoders
import WebImageHTTP
import WebImageOrigin
import WebImageTestSupport

struct SoakSettings: Sendable {
    var loads: Int
    var concurrency: Int
    var imageCount: Int
    var cancelRate: Double
    var failureRate: Double
    var memoryLimit: Int
    var diskLimit: Int
    var seed: UInt64
}

/// One image the origin serves, and what a load of it must deliver.
struct SoakImage: Sendable {
    var data: Data
    var contentType: String
    var width: Int
    var height: Int

    /// JPEG (baseline and progressive), PNG, an animated GIF, WebP still and animated.
    static func makeAll() throws -> [SoakImage] {
        let coders = ImageCodersManager.shared
        func still(
            _ bitmap: Bitmap,
            _ format: ImageFormat,
            _ type: String,
            progressive: Bool = false
        ) throws
            -> SoakImage
        {
            let data = try coders.encode(
                DecodedImage(bitmap: bitmap, format: format),
                as: format,
                options: .init(quality: 0.8, progressive: progressive)
            )
            return SoakImage(data: data, contentType: type, width: bitmap.width, height: bitmap.height)
        }
        func animated(_ format: ImageFormat, _ type: String) throws -> SoakImage {
            let colors = (0..<3).map { RGBA(r: UInt8(60 * $0), g: 120, b: 200) }
            let animation = GeneratedImages.animation(width: 96, height: 64, colors: colors, format: format)
            return SoakImage(
                data: try coders.encode(animation, as: format),
                contentType: type,
                width: 96,
                height: 64
            )
        }
        return [
            try still(GeneratedImages.noise(width: 320, height: 240), .jpeg, "image/jpeg"),
            try still(GeneratedImages.gradient(width: 400, height: 300), .jpeg, "image/jpeg", progressive: true),
            try still(GeneratedImages.noise(width: 128, height: 96), .png, "image/png"),
            try animated(.gif, "image/gif"),
            try still(GeneratedImages.gradient(width: 256, height: 192), .webp, "image/webp"),
            try animated(.webp, "image/webp"),
        ]
    }
}

/// How one load ended.
enum SoakOutcome: Sendable {
    case network, memory, disk, cancelled
    /// A load of a failing URL that failed as it should.
    case expectedFailure
    /// Anything else: the report lists these.
    case unexpected(String)
    /// No completion within the watchdog's minute.
    case hung(String)
}

/// Runs the soak: the origin, one manager over a small cache, the loads, then the leak checks.
struct SoakRun: Sendable {
    let settings: SoakSettings

    private static let failingCodes: Set<WebImageError.Code> = [
        .invalidDownloadStatusCode, .badImageData, .networkError, .blackListed,
    ]

    /// Loads not finished yet: when each started, and how the watchdog ends it.
    private typealias InFlight = Protected<
        [Int: (started: ContinuousClock.Instant, finish: @Sendable (SoakOutcome) -> Void)]
    >

    /// What one load asks for and expects.
    private struct Plan: Sendable {
        var url: URL
        var expected: SoakImage?
        var options: ImageOptions
        var cancelAfter: Double?
        /// Through `async` `loadImage` (cancelled by cancelling its Swift task) rather than the
        /// completion-handler API.
        var usesAsync: Bool
    }

    /// What a run loads through, and what it watches.
    private struct Stack: Sendable {
        var origin: OriginServer
        var images: [SoakImage]
        var folder: URL
        var cache: ImageCache
        var session: HTTPSession
        var downloader: ImageDownloader
        var manager: ImageManager
        var tally = Protected(SoakTally())
        var inFlight = InFlight([:])
    }

    func run(log: @escaping @Sendable (String) -> Void) async throws -> SoakReport {
        var report = SoakReport(settings: settings)
        let descriptorsBefore = ProcessStats.openDescriptors()
        report.descriptorsAtStart = descriptorsBefore.count
        let stack = try await makeStack()
        defer { try? FileManager.default.removeItem(at: stack.folder) }
        let sampler = Self.sample(stack)
        report.seconds = await drive(stack, log: log).seconds
        sampler.cancel()
        _ = await sampler.value
        try await settle(stack, into: &report)
        report.record(
            descriptorsBefore: descriptorsBefore,
            after: await Self.descriptorsOnceCacheIsQuiet(stack),
            cacheFolder: stack.folder
        )
        report.tally = stack.tally.withLock { $0 }
        return report
    }

    /// The origin on loopback (the images, slow and chunked routes among them, and routes that
    /// fail: corrupt and truncated) and the cache, session, downloader and manager over them.
    private func makeStack() async throws -> Stack {
        let images = try SoakImage.makeAll()
        let origin = try await OriginServer.start()
        origin.recordsRequests = false
        for index in 0..<settings.imageCount {
            let image = images[index % images.count]
            var behavior = OriginRoute.Behavior()
            if index % 7 == 0 { behavior.chunkSize = 4096 }
            if index % 11 == 0 { behavior.delay = .milliseconds(5) }
            origin.setRoute(
                "/img/\(index)",
                .data(image.data, contentType: image.contentType, cacheControl: "max-age=86400", behavior: behavior)
            )
        }
        let jpeg = images[0].data
        for index in 0..<20 {
            origin.setRoute(
                "/fail/corrupt-\(index)",
                .data(Data(jpeg.prefix(200).reversed()), contentType: "image/jpeg")
            )
            origin.setRoute("/fail/truncated-\(index)", OriginRoute(body: jpeg, behavior: .init(truncateAfter: 1000)))
        }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("webimage-soak-\(UUID().uuidString)")
        var cacheConfiguration = ImageCache.Configuration()
        cacheConfiguration.memoryLimits = .init(costLimit: settings.memoryLimit)
        cacheConfiguration.disk.maxSize = settings.diskLimit
        cacheConfiguration.cleanupInterval = .seconds(1)
        let cache = ImageCache(directory: folder, configuration: cacheConfiguration)
        var sessionConfiguration = HTTPSession.Configuration()
        sessionConfiguration.maximumConnectionsPerHost = 6
        let session = HTTPSession(configuration: sessionConfiguration)
        let downloader = ImageDownloader(session: session)
        return Stack(
            origin: origin,
            images: images,
            folder: folder,
            cache: cache,
            session: session,
            downloader: downloader,
            manager: ImageManager(cache: cache, loader: downloader)
        )
    }

    /// Sampling and the watchdog, every 100 ms until cancelled: descriptors, RSS and disk size;
    /// loads stuck for a minute are ended as hung.
    private static func sample(_ stack: Stack) -> Task<Void, Never> {
        Task {
            let clock = ContinuousClock()
            var ticks = 0
            while !Task.isCancelled {
                let descriptors = ProcessStats.openDescriptors().count
                let disk = ticks % 10 == 0 ? await stack.cache.totalDiskSize() : 0
                stack.tally.withLock { tally in
                    tally.peakDescriptors = max(tally.peakDescriptors, descriptors)
                    tally.peakDiskBytes = max(tally.peakDiskBytes, disk)
                }
                let now = clock.now
                let stuck = stack.inFlight.withLock { loads in loads.filter { now - $0.value.started > .seconds(60) } }
                for (index, load) in stuck { load.finish(.hung("load \(index) had no completion after 60 s")) }
                ticks += 1
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
    }

    /// Runs every load, `concurrency` at a time, logging progress every 5,000; returns the time
    /// they took.
    private func drive(_ stack: Stack, log: @escaping @Sendable (String) -> Void) async -> Duration {
        let clock = ContinuousClock()
        let start = clock.now
        let next = Protected(0)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<min(settings.concurrency, settings.loads) {
                group.addTask {
                    while true {
                        let index = next.withLock { next in
                            defer { next += 1 }
                            return next
                        }
                        guard index < settings.loads else { return }
                        let plan = plan(index, origin: stack.origin, images: stack.images)
                        let outcome = await load(
                            index,
                            plan,
                            manager: stack.manager,
                            inFlight: stack.inFlight,
                            tally: stack.tally
                        )
                        stack.tally.withLock { $0.record(outcome) }
                        if (index + 1) % 5000 == 0 {
                            let seconds = (clock.now - start).seconds
                            let rss = Double(ProcessStats.statusBytes("VmRSS")) / 1_048_576
                            log(
                                "\(index + 1) loads in \(String(format: "%.1f", seconds)) s, RSS "
                                    + "\(String(format: "%.1f", rss)) MiB"
                            )
                        }
                    }
                }
            }
        }
        return clock.now - start
    }

    /// Waits until everything settles (no running load, no operation, no HTTP task, no queued
    /// disk write left), reads what is left into `report`, and stops the session and the origin.
    private func settle(_ stack: Stack, into report: inout SoakReport) async throws {
        let (manager, downloader, cache) = (stack.manager, stack.downloader, stack.cache)
        await Self.waitUntil { !manager.isRunning && downloader.currentDownloadCount == 0 }
        await Self.waitUntil {
            DownloadOperation.liveCount.load(ordering: .relaxed) == 0
                && ImageLoadOperation.liveCount.load(ordering: .relaxed) == 0
                && HTTPSessionTask.liveCount.load(ordering: .relaxed) == 0
        }
        // Disk writes the last loads queued (at background priority: on a busy machine they
        // lag) end before the open files are counted; a file still open after this is a leak.
        await manager.flush()
        report.liveDownloadOperations = DownloadOperation.liveCount.load(ordering: .relaxed)
        report.liveLoadOperations = ImageLoadOperation.liveCount.load(ordering: .relaxed)
        report.liveHTTPTasks = HTTPSessionTask.liveCount.load(ordering: .relaxed)
        report.originRequests = stack.origin.totalRequestCount
        report.memoryCost = cache.memoryCache.totalCost
        _ = await cache.deleteOldFiles()
        report.diskBytesAfterTrim = await cache.totalDiskSize()
        report.socketsWhileIdle = ProcessStats.openDescriptors().filter { $0.hasPrefix("socket:") }.count
        try await stack.session.shutdown()
        await stack.origin.stop()
    }

    /// The URL, options and cancellation of load `index` (the same for the same seed).
    private func plan(_ index: Int, origin: OriginServer, images: [SoakImage]) -> Plan {
        var random = SplitMix64(seed: settings.seed &* 0x2545_F491_4F6C_DD1D ^ UInt64(index))
        let cancelAfter =
            Double.random(in: 0..<1, using: &random) < settings.cancelRate
            ? Double.random(in: 0..<0.003, using: &random) : nil
        let usesAsync = Int.random(in: 0..<10, using: &random) < 3
        if Double.random(in: 0..<1, using: &random) < settings.failureRate {
            let kind = ["missing", "corrupt", "truncated"].randomElement(using: &random)!
            let url = origin.url("/fail/\(kind)-\(Int.random(in: 0..<20, using: &random))")
            let options: ImageOptions = Bool.random(using: &random) ? [.retryFailed] : []
            return Plan(url: url, expected: nil, options: options, cancelAfter: cancelAfter, usesAsync: usesAsync)
        }
        // A skewed pick: low indexes are popular (memory hits), the tail comes back from disk or
        // the network once the small caches have let it go.
        let unit = Double.random(in: 0..<1, using: &random)
        let imageIndex = min(settings.imageCount - 1, Int(unit * unit * Double(settings.imageCount)))
        var options: ImageOptions = []
        switch Int.random(in: 0..<100, using: &random) {
        case 0..<10: options.insert(.progressiveLoad)
        case 10..<15: options.insert(.highPriority)
        case 15..<20: options.insert(.lowPriority)
        // With the completion-handler API a refreshed load may finish twice (cached, then new).
        case 20..<23 where usesAsync: options.insert(.refreshCached)
        case 23..<26: options.insert(.fromLoaderOnly)
        default: break
        }
        return Plan(
            url: origin.url("/img/\(imageIndex)"),
            expected: images[imageIndex % images.count],
            options: options,
            cancelAfter: cancelAfter,
            usesAsync: usesAsync
        )
    }

    /// Runs one load through the manager's callback API and waits for its one final completion.
    private func load(
        _ index: Int,
        _ plan: Plan,
        manager: ImageManager,
        inFlight: InFlight,
        tally: Protected<SoakTally>
    ) async -> SoakOutcome {
        if plan.usesAsync { return await loadAsync(index, plan, manager: manager, inFlight: inFlight) }
        return await withHandOffContinuation { continuation in
            let resumed = Protected(false)
            let finish: @Sendable (SoakOutcome) -> Void = { outcome in
                let first = resumed.withLock { resumed in
                    defer { resumed = true }
                    return !resumed
                }
                if first {
                    inFlight.withLock { _ = $0.removeValue(forKey: index) }
                    continuation.resume(returning: outcome)
                } else if case .hung = outcome {
                    return
                } else {
                    tally.withLock { $0.extraCompletions += 1 }
                }
            }
            inFlight.withLock { $0[index] = (ContinuousClock.now, finish) }
            let operation = manager.loadImage(with: plan.url, options: plan.options) {
                image,
                _,
                error,
                cacheType,
                finished,
                _ in
                guard finished else { return }
                finish(Self.classify(plan, image: image, error: error, cacheType: cacheType))
            }
            if let delay = plan.cancelAfter {
                DispatchQueue.global().asyncAfter(deadline: .now() + delay) { operation.cancel() }
            }
        }
    }

    /// Runs one load through `async` `loadImage`; cancelling means cancelling its task.
    private func loadAsync(
        _ index: Int,
        _ plan: Plan,
        manager: ImageManager,
        inFlight: InFlight
    ) async -> SoakOutcome {
        let task = Task { () -> SoakOutcome in
            do throws(WebImageError) {
                let result = try await manager.loadImage(with: plan.url, options: plan.options)
                return Self.classify(plan, image: result.image, error: nil, cacheType: result.cacheType)
            } catch {
                return Self.classify(plan, image: nil, error: error, cacheType: .none)
            }
        }
        // The watchdog cannot end an awaited task: it cancels it, and the load reports the hang.
        let hang = Protected<SoakOutcome?>(nil)
        inFlight.withLock {
            $0[index] = (
                ContinuousClock.now,
                { outcome in
                    hang.withLock { $0 = outcome }
                    task.cancel()
                }
            )
        }
        if let delay = plan.cancelAfter {
            try? await Task.sleep(for: .microseconds(Int(delay * 1e6)))
            task.cancel()
        }
        let outcome = await task.value
        inFlight.withLock { _ = $0.removeValue(forKey: index) }
        return hang.withLock { $0 } ?? outcome
    }

    private static func classify(
        _ plan: Plan,
        image: DecodedImage?,
        error: WebImageError?,
        cacheType: ImageCacheType
    ) -> SoakOutcome {
        if let error {
            if error.code == .cancelled {
                return plan.cancelAfter != nil ? .cancelled : .unexpected("not cancelled, yet: \(error)")
            }
            if plan.expected == nil, failingCodes.contains(error.code) { return .expectedFailure }
            return .unexpected("\(error.code): \(error.message)")
        }
        guard let expected = plan.expected else { return .unexpected("\(plan.url): a failing URL loaded") }
        guard let image, image.width == expected.width, image.height == expected.height else {
            let size = image.map { "\($0.width)×\($0.height)" } ?? "no image"
            return .unexpected("\(plan.url): \(size), expected \(expected.width)×\(expected.height)")
        }
        switch cacheType {
        case .memory: return .memory
        case .disk: return .disk
        case .none, .all: return .network
        }
    }

    /// The open descriptors once no cache file is open, or after 10 s of asking. A cancelled
    /// load's disk read may still be running, and the cache's cleanup timer lists the folder now
    /// and then: both close their files within moments; a leaked descriptor stays open for good.
    private static func descriptorsOnceCacheIsQuiet(_ stack: Stack) async -> [String] {
        let readQueue = stack.cache.configuration.diskReadQueue
        let clock = ContinuousClock()
        let end = clock.now + .seconds(10)
        while true {
            await waitUntil { readQueue.runningCount == 0 && readQueue.waitingCount == 0 }
            await withHandOffContinuation { done in stack.cache.flush { done.resume() } }
            let descriptors = ProcessStats.openDescriptors()
            if clock.now >= end || !descriptors.contains(where: { $0.hasPrefix(stack.folder.path) }) {
                return descriptors
            }
            try? await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Waits (at most 10 s) for `condition`.
    private static func waitUntil(_ condition: () -> Bool) async {
        let clock = ContinuousClock()
        let end = clock.now + .seconds(10)
        while !condition() && clock.now < end { try? await Task.sleep(for: .milliseconds(10)) }
    }
}

extension Duration {
    fileprivate var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
