import Foundation
import Testing
import WebImageOrigin
import WebImageTestSupport

@testable import WebImage

@Suite("ImageDownloader releases finished operations", .serialized, .timeLimit(.minutes(1)))
struct LeakTests {
    @Test("Completed, failed and cancelled loads leave no operation alive")
    func noLeaks() async throws {
        let origin = try await OriginServer.start()
        origin.setRoute("/ok.png", DownloaderFixtures.route())
        origin.setRoute("/slow.png", DownloaderFixtures.route(behavior: .init(delay: .seconds(5))))
        // Weak references to this test's own operations: the suites running in parallel have
        // theirs, so the process-wide count says nothing about this downloader.
        let created = Locked<[WeakOperation]>([])
        do {
            var configuration = ImageDownloader.Configuration()
            configuration.operationFactory = { url, options, context in
                let operation = DownloadOperation(url: url, options: options, context: context)
                created.withLock { $0.append(WeakOperation(operation)) }
                return operation
            }
            let downloader = ImageDownloader(configuration: configuration)
            for index in 0..<20 { _ = try await downloader.image(with: origin.url("/ok.png?\(index)")) }
            _ = try? await downloader.image(with: origin.url("/missing.png"))
            let token = downloader.download(with: origin.url("/slow.png")) { _, _, _, _ in }
            await DownloaderFixtures.wait { origin.requestCount(for: "/slow.png") == 1 }
            token?.cancel()
        }
        #expect(created.value.count == 22)
        // The cancelled load's operation ends when its task notices; give it a moment.
        await DownloaderFixtures.wait({ created.value.allSatisfy { $0.operation == nil } }, timeout: .seconds(10))
        let alive = created.value.filter { $0.operation != nil }.count
        #expect(alive == 0, "\(alive) of \(created.value.count) operations still alive")
        await origin.stop()
    }
}

private struct WeakOperation: Sendable {
    weak var operation: DownloadOperation?
    init(_ operation: DownloadOperation) { self.operation = operation }
}
