import Foundation
import Testing
import WebImageHTTP
import WebImageOrigin
import WebImageTestSupport

@Suite("Session-level delegate and uploads", .timeLimit(.minutes(1)))
struct SessionDelegateTests {
    @Test("The session delegate hears every task; a task's delegate decides redirects first")
    func sessionDelegate() async throws {
        let origin = try await OriginServer.start()
        origin.setRoute("/a", .data(Data("a".utf8), contentType: "text/plain"))
        origin.setRoute("/moved", .redirect(to: "/a"))
        let sessionDelegate = RecordingDelegate(followRedirects: false)
        let session = HTTPSession(delegate: sessionDelegate)
        _ = try await session.data(for: .init(url: origin.url("/a")))
        let (_, refused) = try await session.data(for: .init(url: origin.url("/moved")))
        #expect(refused.statusCode == 302, "the session delegate refused the redirect")
        let (body, followed) = try await session.data(
            for: .init(url: origin.url("/moved")),
            delegate: RecordingDelegate()
        )
        #expect(followed.statusCode == 200 && body == Data("a".utf8), "the task's delegate decides first")
        let state = sessionDelegate.state.withLock { $0 }
        #expect(state.completed.count == 3 && state.responses.count == 3)
        try await session.shutdown()
        await origin.stop()
    }

    @Test("A file upload streams from disk and reports progress")
    func fileUpload() async throws {
        let context = try await HTTPTestContext.make()
        let directory = try TemporaryDirectory()
        let file = directory.file("upload.bin")
        let payload = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 13) })
        try payload.write(to: file)
        let task = context.session.uploadTask(with: .init(url: context.origin.url("/echo")), fromFile: file)
        let events = task.events
        task.resume()
        for await _ in events {}
        #expect(task.error == nil)
        #expect(task.countOfBytesSent == 300_000 && task.countOfBytesExpectedToSend == 300_000)
        let received = try #require(context.origin.requests.last)
        #expect(received.method == "POST" && received.body == payload)
        directory.remove()
        await context.finish()
    }
}
