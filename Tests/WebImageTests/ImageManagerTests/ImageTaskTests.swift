import Foundation
import Testing
import WebImage
import WebImageOrigin
import WebImageTestSupport

@Suite("ImageRequest and ImageTask", .timeLimit(.minutes(1)))
struct ImageTaskTests {
    /// A manager whose downloader runs one load at a time.
    static func serialFixture() throws -> ManagerFixture {
        var configuration = ImageDownloader.Configuration()
        configuration.maxConcurrentDownloads = 1
        return try ManagerFixture(downloader: ImageDownloader(configuration: configuration))
    }

    @Test("Priority changed while queued reorders the downloader's queue; the origin sees the new order")
    func priorityReordersQueue() async throws {
        let fixture = try Self.serialFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        for name in ["a", "b", "c", "d"] { origin.setRoute("/\(name).png", DownloaderFixtures.route()) }
        fixture.downloader.setSuspended(true)
        let tasks = ["a", "b", "c", "d"].map { fixture.manager.imageTask(with: origin.url("/\($0).png")) }
        await DownloaderFixtures.wait { fixture.downloader.currentDownloadCount == 4 }
        tasks[2].priority = .veryHigh
        tasks[0].priority = .veryLow
        tasks[3].priority = .high
        #expect(tasks[2].priority == .veryHigh)
        fixture.downloader.setSuspended(false)
        for task in tasks { _ = try await task.response }
        #expect(origin.requests.map(\.path) == ["/c.png", "/d.png", "/b.png", "/a.png"])
        #expect(tasks.allSatisfy { $0.state == .completed })
        await origin.stop()
    }

    @Test("A request's priority is where its download starts in the queue")
    func requestPriority() async throws {
        let fixture = try Self.serialFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        for name in ["a", "b", "c"] { origin.setRoute("/\(name).png", DownloaderFixtures.route()) }
        fixture.downloader.setSuspended(true)
        let priorities: [(String, ImagePriority)] = [("a", .low), ("b", .normal), ("c", .veryHigh)]
        let tasks = priorities.map { name, priority in
            fixture.manager.imageTask(with: ImageRequest(url: origin.url("/\(name).png"), priority: priority))
        }
        await DownloaderFixtures.wait { fixture.downloader.currentDownloadCount == 3 }
        fixture.downloader.setSuspended(false)
        for task in tasks { _ = try await task.response }
        #expect(origin.requests.map(\.path) == ["/c.png", "/b.png", "/a.png"])
        await origin.stop()
    }

    @Test("networkOnly downloads again, cacheOnly never does, revalidate sends the validator")
    func cachePolicies() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        origin.setRoute(
            "/a.png",
            OriginRoute(headers: [("Content-Type", "image/png"), ("ETag", "\"v1\"")], body: ManagerImages.redPNG)
        )
        let url = origin.url("/a.png")

        // cacheOnly on an empty cache: a typed cacheMiss, and no request.
        do {
            _ = try await fixture.manager.loadImage(with: ImageRequest(url: url, cachePolicy: .cacheOnly))
            Issue.record("cacheOnly loaded an uncached image")
        } catch {
            #expect(error.code == .cacheMiss)
        }
        #expect(origin.requests.isEmpty)

        let first = try await fixture.manager.loadImage(with: ImageRequest(url: url))
        #expect(first.cacheType == .none)
        await fixture.settle()
        #expect(
            try await fixture.manager.loadImage(with: ImageRequest(url: url, cachePolicy: .cacheOnly)).cacheType
                == .memory
        )
        let network = try await fixture.manager.loadImage(with: ImageRequest(url: url, cachePolicy: .networkOnly))
        #expect(network.cacheType == .none)
        #expect(origin.requestCount(for: "/a.png") == 2)

        // revalidate: the cached image first, then the server's "not modified" keeps it.
        let task = fixture.manager.imageTask(with: ImageRequest(url: url, cachePolicy: .revalidate))
        var steps: [String] = []
        for try await event in task.events {
            switch event {
            case .cached(let result): steps.append("cached \(result.cacheType)")
            case .finished(let result): steps.append("finished \(result.image?.width ?? 0)")
            case .progress, .preview, .info: break
            }
        }
        #expect(steps.last == "finished 40")
        #expect(origin.requests.last?.header("if-none-match") == "\"v1\"")
        #expect(origin.requestCount(for: "/a.png") == 3)
        await origin.stop()
    }

    @Test("Failures arrive typed: a 404 through events, a corrupt image with its decoder's code")
    func typedFailures() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        origin.setRoute("/missing.png", OriginRoute(status: 404, body: Data("no".utf8)))
        var truncated = ManagerImages.redPNG
        truncated.removeLast(truncated.count / 2)
        origin.setRoute("/cut.png", .data(truncated, contentType: "image/png"))

        let task = fixture.manager.imageTask(with: origin.url("/missing.png"))
        do {
            for try await _ in task.events {}
            Issue.record("a 404 finished")
        } catch {
            // `error` is a WebImageError: no cast.
            #expect(error.code == .invalidDownloadStatusCode)
            #expect(error.statusCode == 404)
        }
        #expect(task.state == .failed)

        let result: Result<ImageLoadResult, WebImageError> = await withCheckedContinuation { continuation in
            _ = fixture.manager.loadImage(with: origin.url("/cut.png")) { result in
                continuation.resume(returning: result)
            }
        }
        guard case .failure(let error) = result else {
            Issue.record("a truncated PNG decoded")
            return
        }
        #expect(error.code == .badImageData)
        #expect(error.coderError?.code == "truncatedData" || error.coderError?.code == "corruptData")
        await origin.stop()
    }

    @Test("Cancelling the ImageTask, or the Swift task awaiting it, ends the load with cancelled")
    func cancellation() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        let gate = OriginGate()
        origin.setRoute("/slow.png", DownloaderFixtures.route(behavior: .init(gate: gate)))
        origin.setRoute("/slow2.png", DownloaderFixtures.route(behavior: .init(gate: gate)))

        let task = fixture.manager.imageTask(with: origin.url("/slow.png"))
        let waiter = Task { () -> WebImageError.Code? in
            do throws(WebImageError) {
                _ = try await task.image
                return nil
            } catch { return error.code }
        }
        await DownloaderFixtures.wait { origin.requestCount(for: "/slow.png") == 1 }
        task.cancel()
        #expect(await waiter.value == .cancelled)
        #expect(task.state == .cancelled)

        let second = fixture.manager.imageTask(with: origin.url("/slow2.png"))
        let swiftTask = Task { try await second.response }
        await DownloaderFixtures.wait { origin.requestCount(for: "/slow2.png") == 1 }
        swiftTask.cancel()
        do {
            _ = try await swiftTask.value
            Issue.record("a cancelled Swift task got the image")
        } catch {
            #expect((error as? WebImageError)?.code == .cancelled)
        }
        #expect(second.state == .cancelled)
        await DownloaderFixtures.wait { fixture.downloader.currentDownloadCount == 0 }
        #expect(fixture.downloader.currentDownloadCount == 0, "the download stopped: nobody wanted it")
        gate.open()
        await origin.stop()
    }

    @Test("Progress with an unknown total is nil, not 0; progress and the result reach every reader")
    func progressAndResult() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        let gate = OriginGate()
        let body = try PNGCoder().encode(
            DecodedImage(bitmap: GeneratedImages.gradient(width: 40, height: 300), format: .png),
            as: .png,
            options: .init()
        )
        // Each chunk after the first is sent only once the reader has seen the last report and
        // 0.15 s more have passed (longer than the downloader's 0.1 s progress throttle); the
        // first only 0.15 s after the request arrived, so after the download's opening report
        // (sent as it starts, perhaps before the reader listens). Every chunk is reported,
        // however late the machine runs the reader or the download.
        let release = OriginChunkRelease()
        let behavior = OriginRoute.Behavior(
            chunkSize: body.count / 3 + 1,
            gate: gate,
            chunkedEncoding: true,
            chunkRelease: release
        )
        origin.setRoute("/chunked.png", DownloaderFixtures.route(body, behavior: behavior))
        let task = fixture.manager.imageTask(with: origin.url("/chunked.png"))
        let progress = task.progress
        let reader = Task {
            var seen: [ImageTask.Progress] = []
            for await step in progress {
                seen.append(step)
                try? await Task.sleep(for: .milliseconds(150))
                release.release()
            }
            return seen
        }
        await DownloaderFixtures.wait { origin.requestCount(for: "/chunked.png") == 1 }
        try await Task.sleep(for: .milliseconds(150))
        gate.open()
        let image = try await task.image
        #expect(image.width == 40)
        let seen = await reader.value
        #expect(seen.count >= 3, "\(seen)")
        #expect(seen.dropLast().allSatisfy { $0.total == nil && $0.fraction == nil }, "\(seen)")
        // The last report comes with the whole body: its size is then the total.
        #expect(seen.last == ImageTask.Progress(completed: Int64(body.count), total: Int64(body.count)))
        #expect(task.currentProgress.completed == Int64(body.count))
        // Awaited again after the end, the outcome is still there.
        #expect(try await task.response.image?.width == 40)
        await origin.stop()
    }

    @Test("Transformers as leading-dot shorthands; one side of a resize follows the aspect ratio")
    func transformerShorthands() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        origin.setRoute("/a.png", .data(ManagerImages.redPNG, contentType: "image/png"))
        let request = ImageRequest(
            url: origin.url("/a.png"),
            transformers: [.resize(width: 20), .roundCorners(4)]
        )
        let result = try await fixture.manager.loadImage(with: request)
        let image = try #require(result.image)
        #expect(image.width == 20)
        #expect(image.height == 15)
        #expect(image.bitmap[0, 0].a == 0, "the corner is transparent")
        #expect(image.bitmap[10, 7].a == 255)
        let key = fixture.manager.cacheKey(for: request.url, context: request.resolvedContext)
        #expect(key.contains("Resize(fit,20x0)") && key.contains("RoundCorner"))
        await origin.stop()
    }
}
