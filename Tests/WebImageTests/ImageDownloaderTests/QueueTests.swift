import Foundation
import Testing
import WebImage
import WebImageOrigin
import WebImageTestSupport

@Suite("ImageDownloader queue", .timeLimit(.minutes(1)))
struct QueueTests {
    @Test("The origin never sees more than maxConcurrentDownloads loads at once")
    func concurrencyLimit() async throws {
        let origin = try await OriginServer.start()
        // The origin holds its answers until two requests are in: the limit is reached however
        // slowly the machine starts them, and never passed.
        let gate = OriginGate()
        for index in 0..<8 {
            origin.setRoute(
                "/\(index).png",
                DownloaderFixtures.route(behavior: .init(delay: .milliseconds(60), gate: gate))
            )
        }
        var configuration = ImageDownloader.Configuration()
        configuration.maxConcurrentDownloads = 2
        let downloader = ImageDownloader(configuration: configuration)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<8 { group.addTask { _ = try await downloader.image(with: origin.url("/\(index).png")) } }
            group.addTask {
                await waitUntil({ origin.requests.count >= 2 }, timeout: .seconds(30))
                gate.open()
            }
            try await group.waitForAll()
        }
        #expect(origin.maxConcurrentRequests == 2)
        #expect(origin.requests.count == 8)
        await origin.stop()
    }

    @Test("LIFO starts the newest waiting load first; high priority goes before both")
    func orderAndPriority() async throws {
        let origin = try await OriginServer.start()
        for name in ["a", "b", "c", "d"] { origin.setRoute("/\(name).png", DownloaderFixtures.route()) }
        var configuration = ImageDownloader.Configuration()
        configuration.maxConcurrentDownloads = 1
        configuration.executionOrder = .lifo
        let downloader = ImageDownloader(configuration: configuration)
        downloader.setSuspended(true)
        let done = Locked(0)
        for (name, options) in [("a", ImageOptions()), ("b", .highPriority), ("c", []), ("d", .lowPriority)] {
            downloader.download(with: origin.url("/\(name).png"), options: options) { _, _, _, _ in
                done.withLock { $0 += 1 }
            }
        }
        try await Task.sleep(for: .milliseconds(100))
        #expect(origin.requests.isEmpty, "a suspended downloader starts nothing")
        downloader.setSuspended(false)
        await DownloaderFixtures.wait { done.value == 4 }
        #expect(origin.requests.map(\.path) == ["/b.png", "/c.png", "/a.png", "/d.png"])
        await origin.stop()
    }
}
