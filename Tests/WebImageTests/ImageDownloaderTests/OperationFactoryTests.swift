import Foundation
import Synchronization
import Testing
import WebImage
import WebImageOrigin
import WebImageTestSupport

/// Wraps the default operation and counts the loads it starts.
private final class CountingOperation: DownloadOperationProtocol {
    static let starts = Atomic<Int>(0)
    let inner: DownloadOperation

    init(url: URL, options: ImageOptions, context: ImageContext) {
        inner = DownloadOperation(url: url, options: options, context: context)
    }

    var url: URL { inner.url }
    var options: ImageOptions { inner.options }
    var isFinished: Bool { inner.isFinished }

    func addHandlers(
        for token: DownloadToken,
        options: ImageOptions,
        progress: ImageDownloader.ProgressHandler?,
        completed: @escaping ImageDownloader.CompletedHandler
    ) -> Bool { inner.addHandlers(for: token, options: options, progress: progress, completed: completed) }

    func cancelHandlers(for token: DownloadToken) -> Bool { inner.cancelHandlers(for: token) }
    func cancel() { inner.cancel() }

    func start(in environment: ImageDownloadEnvironment, onFinish: @escaping @Sendable () -> Void) {
        Self.starts.add(1, ordering: .relaxed)
        inner.start(in: environment, onFinish: onFinish)
    }
}

/// Answers every load with fixed bytes, without the network.
private final class CannedOperation: DownloadOperationProtocol {
    let url: URL
    let options: ImageOptions
    private let state = Mutex<(handlers: [DownloadToken: ImageDownloader.CompletedHandler], finished: Bool)>(
        ([:], false)
    )

    init(url: URL, options: ImageOptions) {
        self.url = url
        self.options = options
    }

    var isFinished: Bool { state.withLock { $0.finished } }

    func addHandlers(
        for token: DownloadToken,
        options: ImageOptions,
        progress: ImageDownloader.ProgressHandler?,
        completed: @escaping ImageDownloader.CompletedHandler
    ) -> Bool {
        state.withLock { state in
            guard !state.finished else { return false }
            state.handlers[token] = completed
            return true
        }
    }

    func cancelHandlers(for token: DownloadToken) -> Bool {
        let (handler, empty) = state.withLock { state in
            let handler = state.handlers.removeValue(forKey: token)
            if state.handlers.isEmpty { state.finished = true }
            return (handler, state.handlers.isEmpty)
        }
        handler?(nil, nil, .cancelled(url), true)
        return empty
    }

    func cancel() { finish(nil, error: .cancelled(url)) }

    func start(in environment: ImageDownloadEnvironment, onFinish: @escaping @Sendable () -> Void) {
        let url = url
        environment.publish(.started(url))
        Task {
            let data = DownloaderFixtures.png
            let image = try? ImageCodersManager.shared.decode(data)
            finish(image, data: data, error: nil)
            environment.publish(.stopped(url))
            onFinish()
        }
    }

    private func finish(_ image: DecodedImage?, data: Data? = nil, error: WebImageError?) {
        let handlers = state.withLock { state in
            defer {
                state.handlers.removeAll()
                state.finished = true
            }
            return Array(state.handlers.values)
        }
        for handler in handlers { handler(image, data, error, true) }
    }
}

@Suite("ImageDownloader custom operations", .timeLimit(.minutes(1)))
struct OperationFactoryTests {
    @Test("A custom operation wrapping the default one runs every load and keeps coalescing")
    func wrappingOperation() async throws {
        let origin = try await OriginServer.start()
        let gate = OriginGate()
        origin.setRoute("/a.png", DownloaderFixtures.route(behavior: .init(gate: gate)))
        var configuration = ImageDownloader.Configuration()
        configuration.operationFactory = { CountingOperation(url: $0, options: $1, context: $2) }
        let downloader = ImageDownloader(configuration: configuration)
        let startsBefore = CountingOperation.starts.load(ordering: .relaxed)
        let widths = Locked<[Int]>([])
        for _ in 0..<5 {
            downloader.download(with: origin.url("/a.png")) { image, _, _, finished in
                if finished { widths.withLock { $0.append(image?.width ?? -1) } }
            }
        }
        await DownloaderFixtures.wait { origin.requestCount(for: "/a.png") == 1 }
        gate.open()
        await DownloaderFixtures.wait { widths.value.count == 5 }
        #expect(widths.value == Array(repeating: 32, count: 5))
        #expect(origin.requestCount(for: "/a.png") == 1)
        #expect(CountingOperation.starts.load(ordering: .relaxed) - startsBefore == 1)
        await origin.stop()
    }

    @Test("A custom operation can answer without the network; cancelling one caller is its job")
    func cannedOperation() async throws {
        var configuration = ImageDownloader.Configuration()
        configuration.operationFactory = { url, options, _ in CannedOperation(url: url, options: options) }
        let downloader = ImageDownloader(configuration: configuration)
        // Nothing listens on this port; only the canned operation can answer.
        let url = URL(string: "http://127.0.0.1:9/never.png")!
        let result = try await downloader.image(with: url)
        #expect(result.image?.width == 32)
        #expect(result.data == DownloaderFixtures.png)

        downloader.setSuspended(true)
        let outcomes = Locked<[String]>([])
        let first = downloader.download(with: url) { _, _, error, _ in
            outcomes.withLock { $0.append(error?.code == .cancelled ? "cancelled" : "image") }
        }
        downloader.download(with: url) { image, _, _, _ in
            outcomes.withLock { $0.append(image == nil ? "none" : "image") }
        }
        first?.cancel()
        #expect(outcomes.value == ["cancelled"])
        downloader.setSuspended(false)
        await DownloaderFixtures.wait { outcomes.value.count == 2 }
        #expect(outcomes.value == ["cancelled", "image"])
    }
}
