import Foundation
import Testing
import WebImage
import WebImageHTTP
import WebImageOrigin
import WebImageTestSupport

/// A session delegate that cancels each task 100 ms after its first chunk, from another Swift
/// task: what a session-wide delegate or a task-notification observer may do to a download.
private final class CancelTasksAfterFirstChunk: HTTPSessionTaskDelegate {
    func task(_ task: HTTPSessionTask, didReceive data: Data) {
        Task {
            try? await Task.sleep(for: .milliseconds(100))
            task.cancel()
        }
    }
}

/// The downloader runs each HTTP exchange in a Swift task of its own operation: `cancel()` on
/// the HTTP task, by whoever holds it, must still reach the exchange.
@Suite("Download task cancellation", .timeLimit(.minutes(1)))
struct TaskCancellationTests {
    @Test("Cancelling a download's HTTP task while its body stalls ends the download cancelled")
    func cancelStalledDownload() async throws {
        let origin = try await OriginServer.start()
        let release = OriginChunkRelease()
        // The first 4 KB go out; the rest waits for a release that comes only after the test.
        origin.setRoute(
            "/stalls.png",
            DownloaderFixtures.route(Data(count: 40_000), behavior: .init(chunkSize: 4_000, chunkRelease: release))
        )
        var sessionConfiguration = HTTPSession.Configuration()
        // Far beyond the suite's limit: only the cancel can end the load in time.
        sessionConfiguration.readTimeout = .seconds(600)
        let session = HTTPSession(configuration: sessionConfiguration, delegate: CancelTasksAfterFirstChunk())
        var configuration = ImageDownloader.Configuration()
        configuration.downloadTimeout = .seconds(600)
        let downloader = ImageDownloader(configuration: configuration, session: session)
        let outcome: Result<ImageDownloadResult, WebImageError>
        do {
            outcome = .success(try await downloader.image(with: origin.url("/stalls.png")))
        } catch {
            outcome = .failure(error)
        }
        switch outcome {
        case .success: Issue.record("a download whose HTTP task was cancelled succeeded")
        case .failure(let error): #expect(error.code == .cancelled, "\(error)")
        }
        #expect(origin.requestCount(for: "/stalls.png") == 1)
        #expect(downloader.currentDownloadCount == 0)
        for _ in 0..<10 { release.release() }
        try await session.shutdown()
        await origin.stop()
    }
}
