import Foundation
import WebImageHTTP
import WebImageOrigin
import WebImageTestSupport

/// A fresh origin and session for one test; `finish()` stops both.
struct HTTPTestContext {
    let origin: OriginServer
    let session: HTTPSession

    static func make(
        configuration: HTTPSession.Configuration = .default,
        basePath: String? = nil
    ) async throws -> HTTPTestContext {
        let origin = try await OriginServer.start()
        let session = HTTPSession(baseURL: basePath.map { origin.url($0) }, configuration: configuration)
        return HTTPTestContext(origin: origin, session: session)
    }

    /// Runs `body` with a fresh context and stops both servers on every path, failures included.
    static func with(
        configuration: HTTPSession.Configuration = .default,
        _ body: (HTTPTestContext) async throws -> Void
    ) async throws {
        let context = try await make(configuration: configuration)
        do {
            try await body(context)
        } catch {
            await context.finish()
            throw error
        }
        await context.finish()
    }

    func finish() async {
        try? await session.shutdown()
        await origin.stop()
    }

    /// The `/echo` reply, decoded.
    static func echo(_ data: Data) throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
    }
}

/// Records delegate callbacks.
final class RecordingDelegate: HTTPSessionTaskDelegate {
    let state = Locked<
        (responses: [HTTPSession.Response], chunks: [Data], redirects: [URL], completed: [HTTPSessionError?])
    >(([], [], [], []))
    /// Each completion's metrics, in order.
    let metrics = Locked<[HTTPTaskMetrics]>([])
    let disposition: HTTPResponseDisposition
    let followRedirects: Bool

    init(disposition: HTTPResponseDisposition = .allow, followRedirects: Bool = true) {
        self.disposition = disposition
        self.followRedirects = followRedirects
    }

    func task(_ task: HTTPSessionTask, didReceive response: HTTPSession.Response) async -> HTTPResponseDisposition {
        state.withLock { $0.responses.append(response) }
        return disposition
    }

    func task(_ task: HTTPSessionTask, didReceive data: Data) { state.withLock { $0.chunks.append(data) } }

    func task(
        _ task: HTTPSessionTask,
        willPerformRedirection response: HTTPSession.Response,
        newRequest: HTTPSession.Request
    ) async -> HTTPSession.Request? {
        state.withLock { $0.redirects.append(newRequest.url) }
        return followRedirects ? newRequest : nil
    }

    func task(_ task: HTTPSessionTask, didCompleteWith error: HTTPSessionError?, metrics: HTTPTaskMetrics) {
        state.withLock { $0.completed.append(error) }
        self.metrics.withLock { $0.append(metrics) }
    }
}
