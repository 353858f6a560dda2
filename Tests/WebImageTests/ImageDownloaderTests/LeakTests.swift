import Foundation
import Synchronization
import Testing
import WebImageOrigin

@testable import WebImage

@Suite("ImageDownloader releases finished operations", .serialized, .timeLimit(.minutes(1)))
struct LeakTests {
    @Test("Completed, failed and cancelled loads leave no operation alive")
    func noLeaks() async throws {
        let origin = try await OriginServer.start()
        origin.setRoute("/ok.png", DownloaderFixtures.route())
        origin.setRoute("/slow.png", DownloaderFixtures.route(behavior: .init(delay: .seconds(5))))
        do {
            let downloader = ImageDownloader()
            for index in 0..<20 { _ = try await downloader.image(with: origin.url("/ok.png?\(index)")) }
            _ = try? await downloader.image(with: origin.url("/missing.png"))
            let token = downloader.download(with: origin.url("/slow.png")) { _, _, _, _ in }
            await DownloaderFixtures.wait { origin.requestCount(for: "/slow.png") == 1 }
            token?.cancel()
        }
        // Other suites run in parallel, so wait for the count to settle rather than expect 0 at once.
        await DownloaderFixtures.wait(
            { DownloadOperation.liveCount.load(ordering: .relaxed) == 0 },
            timeout: .seconds(10)
        )
        #expect(DownloadOperation.liveCount.load(ordering: .relaxed) == 0)
        await origin.stop()
    }
}
