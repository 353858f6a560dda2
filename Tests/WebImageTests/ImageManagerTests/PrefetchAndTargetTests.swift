import Foundation
import Testing
import WebImage
import WebImageOrigin
import WebImageTestSupport

/// A target that records what it was asked to show.
final class RecordingTarget: ImageTarget {
    let shown = Locked<[String]>([])

    func display(_ image: DecodedImage?) {
        let label: String
        if let image {
            let pixel = image.bitmap[0, 0]
            label = pixel.b == 255 ? "blue" : pixel.r == 255 ? "red" : "other"
        } else {
            label = "nil"
        }
        shown.withLock { $0.append(label) }
    }
}

@Suite("ImagePrefetcher and image targets", .timeLimit(.minutes(1)))
struct PrefetchAndTargetTests {
    @Test("Prefetch counts finished and skipped, never more than 3 at once; cached URLs skip the network")
    func prefetcher() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        for index in 0..<8 {
            origin.setRoute(
                "/p\(index).png",
                .data(ManagerImages.redPNG, contentType: "image/png", behavior: .init(delay: .milliseconds(20)))
            )
        }
        let prefetcher = ImagePrefetcher(manager: fixture.manager)
        #expect(prefetcher.maxConcurrentPrefetchCount == 3)
        let urls: [URL?] = (0..<8).map { origin.url("/p\($0).png") } + [origin.url("/missing.png"), nil]
        let reports = Locked<[Int]>([])
        let counts = await withCheckedContinuation { continuation in
            prefetcher.prefetchURLs(
                urls,
                progress: { finished, total in
                    reports.withLock { $0.append(finished) }
                    #expect(total == 10)
                }
            ) { finished, skipped in
                continuation.resume(returning: (finished, skipped))
            }
        }
        #expect(counts.0 == 10)
        #expect(counts.1 == 2)
        #expect(reports.value.sorted() == Array(1...10))
        #expect(origin.maxConcurrentRequests <= 3)

        // Everything is cached now: a second prefetch makes no request.
        let before = origin.requests.count
        let again = await prefetcher.prefetch(urls.compactMap { $0 }.filter { !$0.path.contains("missing") })
        #expect(again.finished == 8)
        #expect(again.cached == 8)
        #expect(origin.requests.count == before)

        // Cancelling stops the rest and reports the counts so far.
        let gate = OriginGate()
        for index in 0..<6 {
            origin.setRoute(
                "/g\(index).png",
                .data(ManagerImages.redPNG, contentType: "image/png", behavior: .init(gate: gate))
            )
        }
        let token = prefetcher.prefetchURLs((0..<6).map { origin.url("/g\($0).png") })
        await DownloaderFixtures.wait { origin.currentConcurrentRequests == 3 }
        token.cancel()
        #expect(token.counts.finished < 6)
        gate.open()
        await origin.stop()
    }

    /// Records what an ``ImagePrefetcherDelegate`` hears.
    final class PrefetchEvents: ImagePrefetcherDelegate {
        let urls = Locked<[(path: String, finished: Int, total: Int)]>([])
        let ends = Locked<[(total: Int, skipped: Int)]>([])

        func imagePrefetcher(
            _ prefetcher: ImagePrefetcher,
            didPrefetchURL url: URL?,
            finishedCount: Int,
            totalCount: Int
        ) {
            urls.withLock { $0.append((url?.path ?? "nil", finishedCount, totalCount)) }
        }

        func imagePrefetcher(_ prefetcher: ImagePrefetcher, didFinishWithTotalCount totalCount: Int, skippedCount: Int)
        {
            ends.withLock { $0.append((totalCount, skippedCount)) }
        }
    }

    @Test(
        "One URL cancelled: its running load stops, a waiting one never starts, the rest finish; the delegate hears each"
    )
    func cancelOneURL() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        let gate = OriginGate()
        origin.setRoute("/held.png", .data(ManagerImages.redPNG, contentType: "image/png", behavior: .init(gate: gate)))
        for path in ["/first.png", "/after.png", "/waiting.png"] {
            origin.setRoute(path, .data(ManagerImages.redPNG, contentType: "image/png"))
        }
        let prefetcher = ImagePrefetcher(manager: fixture.manager)
        prefetcher.maxConcurrentPrefetchCount = 1
        let events = PrefetchEvents()
        prefetcher.delegate = events
        let urls = ["/first.png", "/held.png", "/waiting.png", "/after.png"].map { origin.url($0) }
        let done = Locked<Bool>(false)
        let token = prefetcher.prefetchURLs(urls, completed: { _, _ in done.withLock { $0 = true } })
        // One at a time: /held.png is running (its response held), the two behind it wait.
        await DownloaderFixtures.wait { origin.requestCount(for: "/held.png") == 1 }
        token.cancel(urls[2])
        token.cancel(urls[1])
        await DownloaderFixtures.wait { done.value }
        gate.open()
        #expect(done.value)
        #expect(token.counts.finished == 4 && token.counts.failed == 2)
        #expect(token.failures.map(\.url?.path).sorted { ($0 ?? "") < ($1 ?? "") } == ["/held.png", "/waiting.png"])
        #expect(token.failures.allSatisfy { $0.error.code == .cancelled })
        #expect(origin.requestCount(for: "/waiting.png") == 0, "a cancelled URL that had not started never starts")
        #expect(origin.requestCount(for: "/after.png") == 1, "the URLs behind the cancelled ones still load")
        let heard = events.urls.value
        #expect(heard.map(\.finished) == [1, 2, 3, 4] && heard.allSatisfy { $0.total == 4 })
        #expect(Set(heard.map(\.path)) == ["/first.png", "/held.png", "/waiting.png", "/after.png"])
        #expect(
            events.ends.value.count == 1 && events.ends.value.first?.total == 4 && events.ends.value.first?.skipped == 2
        )
        await origin.stop()
    }

    @Test("A target loading A then B at once ends showing B, never A")
    func targetReuse() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        let gate = OriginGate()
        origin.setRoute("/a.png", .data(ManagerImages.redPNG, contentType: "image/png", behavior: .init(gate: gate)))
        origin.setRoute("/b.png", .data(ManagerImages.bluePNG, contentType: "image/png"))
        let target = RecordingTarget()
        let errors = Locked<[String]>([])
        target.setImage(
            with: origin.url("/a.png"),
            manager: fixture.manager,
            completed: { _, _, error, _, _, _ in
                errors.withLock { $0.append(error?.code.rawValue ?? "ok") }
            }
        )
        target.setImage(with: origin.url("/b.png"), manager: fixture.manager)
        await DownloaderFixtures.wait { target.shown.value.last == "blue" }
        gate.open()
        try await Task.sleep(for: .milliseconds(100))
        #expect(target.shown.value == ["nil", "nil", "blue"])
        #expect(errors.value == ["cancelled"])
        #expect(target.currentImageURL == origin.url("/b.png"))
        await origin.stop()
    }

    @Test("Placeholders: shown at once, or only on failure with delayPlaceholder; nil URL is invalidURL")
    func placeholders() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        let target = RecordingTarget()
        let placeholder = ManagerImages.red

        let error = await withCheckedContinuation { continuation in
            target.setImage(
                with: nil,
                placeholder: placeholder,
                manager: fixture.manager,
                completed: { _, _, error, _, _, _ in
                    continuation.resume(returning: error?.code)
                }
            )
        }
        #expect(error == .invalidURL)
        #expect(target.shown.value == ["red"])

        target.shown.withLock { $0.removeAll() }
        await withCheckedContinuation { continuation in
            target.setImage(
                with: origin.url("/missing.png"),
                placeholder: placeholder,
                options: .delayPlaceholder,
                manager: fixture.manager,
                completed: { _, _, _, _, _, _ in continuation.resume() }
            )
        }
        #expect(target.shown.value == ["red"])

        // avoidAutoSetImage: the completion gets the image, the target does not.
        origin.setRoute("/b.png", .data(ManagerImages.bluePNG, contentType: "image/png"))
        target.shown.withLock { $0.removeAll() }
        let delivered = await withCheckedContinuation { continuation in
            target.setImage(
                with: origin.url("/b.png"),
                options: .avoidAutoSetImage,
                manager: fixture.manager,
                completed: { image, _, _, _, _, _ in continuation.resume(returning: image != nil) }
            )
        }
        #expect(delivered)
        #expect(target.shown.value == ["nil"])

        // Separate operation keys do not cancel each other.
        let both = Locked(0)
        await withCheckedContinuation { continuation in
            for key in ["normal", "highlighted"] {
                target.setImage(
                    with: origin.url("/b.png"),
                    operationKey: key,
                    manager: fixture.manager,
                    completed: { _, _, error, _, _, _ in
                        if error == nil,
                            both.withLock({
                                $0 += 1
                                return $0
                            }) == 2
                        {
                            continuation.resume()
                        }
                    }
                )
            }
        }
        #expect(both.value == 2)
        await origin.stop()
    }
}

@Suite("Stress: ImageManager under concurrent loads", .timeLimit(.minutes(2)))
struct ManagerStressTests {
    @Test("1,000 concurrent loads of 100 URLs: each URL requested once, every load gets its image")
    func thousandLoads() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        for index in 0..<100 {
            origin.setRoute("/s\(index).png", .data(ManagerImages.redPNG, contentType: "image/png"))
        }
        let started = Locked<[String: Int]>([:])
        let events = fixture.downloader.downloadEvents
        let listener = Task {
            for await event in events {
                if case .started(let url) = event { started.withLock { $0[url.path, default: 0] += 1 } }
            }
        }
        let loaded = Locked(0)
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<1000 {
                group.addTask {
                    if let result = try? await fixture.manager.loadImage(with: origin.url("/s\(index % 100).png")),
                        result.image?.width == 40
                    {
                        loaded.withLock { $0 += 1 }
                    }
                }
            }
        }
        #expect(loaded.value == 1000)
        await DownloaderFixtures.wait { started.value.values.reduce(0, +) >= 100 }
        listener.cancel()
        // One network load per URL: the downloader started each once and the origin served each once.
        for index in 0..<100 {
            #expect(started.value["/s\(index).png"] == 1, "loads started for /s\(index).png")
            #expect(
                origin.requestCount(for: "/s\(index).png") == 1,
                "origin requests for /s\(index).png (started \(started.value["/s\(index).png"] ?? 0))"
            )
        }
        await origin.stop()
    }
}
