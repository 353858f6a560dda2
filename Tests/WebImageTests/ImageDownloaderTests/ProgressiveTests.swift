import Foundation
import Testing
import WebImage
import WebImageOrigin
import WebImageTestSupport

@Suite("ImageDownloader progressive loading", .timeLimit(.minutes(1)))
struct ProgressiveTests {
    @Test("A progressive JPEG served slowly gives partial images, then the one-shot pixels")
    func progressiveJPEG() async throws {
        let bitmap = GeneratedImages.noise(width: 160, height: 120)
        let jpeg = try JPEGCoder().encode(
            DecodedImage(bitmap: bitmap, format: .jpeg),
            as: .jpeg,
            options: .init(progressive: true)
        )
        let origin = try await OriginServer.start()
        let drip = DownloaderFixtures.HeldTail(jpeg, chunkSize: 1_500)
        origin.setRoute("/p.jpg", drip.route)
        let downloader = DownloaderFixtures.downloader()
        let events = Locked<[(partial: Bool, image: DecodedImage?)]>([])
        downloader.download(with: origin.url("/p.jpg"), options: .progressiveLoad, context: drip.context) {
            image,
            _,
            _,
            finished in
            events.withLock { $0.append((!finished, image)) }
            if !finished { drip.releaseTail() }
        }
        await DownloaderFixtures.wait { events.value.contains { !$0.partial } }
        let all = events.value
        let partials = all.filter(\.partial)
        // Usually several; a starved CPU may coalesce previews (only the newest snapshot is decoded).
        #expect(partials.count >= 1, "\(partials.count) partial images")
        #expect(partials.allSatisfy { $0.image?.isPartial == true && $0.image?.width == 160 })
        #expect(all.last?.partial == false, "nothing after the final completion")
        let final = try #require(all.last?.image)
        let oneShot = try JPEGCoder().decode(jpeg, options: .init())
        #expect(GeneratedImages.maxDifference(final.bitmap, oneShot.bitmap) == 0)
        await origin.stop()
    }

    @Test("Previews decode on the context's work queue: none while it is full, the final image after")
    func previewsWaitForTheQueue() async throws {
        let jpeg = try Self.progressiveJPEG(width: 160, height: 120)
        let origin = try await OriginServer.start()
        origin.setRoute(
            "/p.jpg",
            .data(jpeg, contentType: "image/jpeg", behavior: .init(chunkSize: 1_500, chunkInterval: .milliseconds(5)))
        )
        let queue = ImageWorkQueue(width: 1)
        let release = DispatchSemaphore(value: 0)
        queue.enqueue { release.wait() }  // holds the only place
        var context = ImageContext()
        context.decodeQueue = queue
        let events = Locked<[Bool]>([])
        let downloader = DownloaderFixtures.downloader()
        let url = origin.url("/p.jpg")
        downloader.download(with: url, options: .progressiveLoad, context: context) { _, _, _, finished in
            events.withLock { $0.append(finished) }
        }
        // The whole body arrives; with no place on the queue nothing is decoded.
        await DownloaderFixtures.wait { queue.waitingCount >= 2 }
        #expect(queue.waitingCount >= 2, "a preview turn and the final decode wait for the place")
        #expect(events.value.isEmpty)
        release.signal()
        await DownloaderFixtures.wait { events.value.contains(true) }
        #expect(events.value.last == true)
        #expect(events.value.filter { $0 }.count == 1)
        #expect(queue.peakRunningCount == 1)
        withExtendedLifetime(downloader) {}
        await origin.stop()
    }

    @Test("No previews while the decoding budget has no room; the final image waits for it")
    func previewsRespectTheBudget() async throws {
        let jpeg = try Self.progressiveJPEG(width: 160, height: 120)
        let origin = try await OriginServer.start()
        origin.setRoute(
            "/p.jpg",
            .data(jpeg, contentType: "image/jpeg", behavior: .init(chunkSize: 1_500, chunkInterval: .milliseconds(5)))
        )
        // Room for one decode exactly: the pixels and the progressive file's coefficient buffer.
        let budget = DecodingMemoryBudget(limit: try #require(ImageHeader(jpeg)).decodedByteCount(with: .init()))
        let held = try #require(budget.reserveIfAvailable(1))
        var context = ImageContext()
        context.decodingMemoryBudget = budget
        let events = Locked<[(finished: Bool, image: DecodedImage?)]>([])
        let downloader = DownloaderFixtures.downloader()
        let url = origin.url("/p.jpg")
        downloader.download(with: url, options: .progressiveLoad, context: context) { image, _, _, finished in
            events.withLock { $0.append((finished, image)) }
        }
        await DownloaderFixtures.wait { budget.waitingCount == 1 }
        #expect(budget.waitingCount == 1, "the final decode waits for room")
        #expect(events.value.isEmpty, "no preview without room for its pixels")
        held.release()
        await DownloaderFixtures.wait { events.value.contains { $0.finished } }
        #expect(events.value.count == 1)
        #expect(events.value.last?.image?.width == 160)
        #expect(budget.bytesInUse == 0)
        withExtendedLifetime(downloader) {}
        await origin.stop()
    }

    private static func progressiveJPEG(width: Int, height: Int) throws -> Data {
        try JPEGCoder().encode(
            DecodedImage(bitmap: GeneratedImages.noise(width: width, height: height), format: .jpeg),
            as: .jpeg,
            options: .init(progressive: true)
        )
    }

    @Test("Without progressiveLoad there are no partial completions")
    func notProgressive() async throws {
        let jpeg = try JPEGCoder().encode(
            DecodedImage(bitmap: GeneratedImages.noise(width: 64, height: 64), format: .jpeg),
            as: .jpeg,
            options: .init(progressive: true)
        )
        let origin = try await OriginServer.start()
        origin.setRoute(
            "/q.jpg",
            .data(jpeg, contentType: "image/jpeg", behavior: .init(chunkSize: 500, chunkInterval: .milliseconds(5)))
        )
        let downloader = DownloaderFixtures.downloader()
        let finishedFlags = Locked<[Bool]>([])
        downloader.download(with: origin.url("/q.jpg")) { _, _, _, finished in
            finishedFlags.withLock { $0.append(finished) }
        }
        await DownloaderFixtures.wait { finishedFlags.value.contains(true) }
        #expect(finishedFlags.value == [true])
        await origin.stop()
    }
}

@Suite("ImageDownloader event stream", .timeLimit(.minutes(1)))
struct EventStreamTests {
    @Test("The stream yields progress, partial images and the final result; breaking off cancels")
    func stream() async throws {
        let jpeg = try JPEGCoder().encode(
            DecodedImage(bitmap: GeneratedImages.noise(width: 120, height: 90), format: .jpeg),
            as: .jpeg,
            options: .init(progressive: true)
        )
        let origin = try await OriginServer.start()
        let drip = DownloaderFixtures.HeldTail(jpeg)
        origin.setRoute("/s.jpg", drip.route)
        let downloader = DownloaderFixtures.downloader()
        var progress = 0
        var partials = 0
        var final: ImageDownloadResult?
        for try await event in downloader.events(
            with: origin.url("/s.jpg"),
            options: .progressiveLoad,
            context: drip.context
        ) {
            switch event {
            case .progress: progress += 1
            case .partial:
                partials += 1
                drip.releaseTail()
            case .finished(let result): final = result
            }
        }
        #expect(progress >= 2 && partials >= 1)
        #expect(final?.image?.width == 120 && final?.data == jpeg)

        // Breaking off early cancels the only caller, so the load stops.
        for try await event in downloader.events(with: origin.url("/s.jpg")) {
            if case .progress = event { break }
        }
        await DownloaderFixtures.wait { downloader.currentDownloadCount == 0 }
        #expect(downloader.currentDownloadCount == 0)
        await origin.stop()
    }
}
