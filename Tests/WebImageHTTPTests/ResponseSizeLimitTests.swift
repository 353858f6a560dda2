import Foundation
import Testing
import WebImageHTTP
import WebImageOrigin
import WebImageTestSupport

@Suite("HTTPSession response size limit", .timeLimit(.minutes(1)))
struct ResponseSizeLimitTests {
    /// Runs `request` as a data task; returns its error and the body bytes it read.
    private func run(_ request: HTTPSession.Request, in context: HTTPTestContext) async -> (HTTPSessionError?, Int64) {
        let task = context.session.dataTask(with: request)
        let events = task.events
        task.resume()
        var failure: HTTPSessionError?
        for await event in events { if case .completed(let error) = event { failure = error } }
        return (failure, task.countOfBytesReceived)
    }

    @Test("A Content-Length over the session's limit fails before the body is read")
    func declaredLengthOverLimit() async throws {
        var configuration = HTTPSession.Configuration()
        configuration.maximumResponseBodySize = 10_000
        let context = try await HTTPTestContext.make(configuration: configuration)
        context.origin.setRoute("/big", .data(Data(count: 50_000), contentType: "image/png"))
        context.origin.setRoute("/fits", .data(Data(count: 10_000), contentType: "image/png"))
        let url = context.origin.url("/big")

        let (error, received) = await run(.init(url: url), in: context)
        let failure = try #require(error)
        #expect(failure.code == .responseTooLarge)
        #expect(failure.message.contains(url.absoluteString) && failure.message.contains("Content-Length of 50000"))
        #expect(failure.message.contains("10000-byte limit") && failure.statusCode == 200)
        #expect(received == 0)

        // Exactly at the limit is fine.
        let (fitsError, fitsReceived) = await run(.init(url: context.origin.url("/fits")), in: context)
        #expect(fitsError == nil && fitsReceived == 10_000)
        await context.finish()
    }

    @Test("A chunked body stops being read at the request's limit")
    func chunkedBodyStopsAtLimit() async throws {
        let context = try await HTTPTestContext.make()
        context.origin.setRoute(
            "/endless",
            OriginRoute(
                headers: [("Content-Type", "image/jpeg")],
                body: Data(count: 16 << 20),
                behavior: .init(chunkSize: 64 << 10, chunkedEncoding: true)
            )
        )
        var request = HTTPSession.Request(url: context.origin.url("/endless"))
        request.maximumBodySize = 256 << 10
        let (error, received) = await run(request, in: context)
        #expect(error?.code == .responseTooLarge, "\(String(describing: error))")
        #expect(error?.message.contains("\(256 << 10)-byte limit") == true)
        #expect(received <= 256 << 10 && received > 0)

        // The request's own limit wins over the session's (none here): without it the body is whole.
        let (unlimitedError, whole) = await run(.init(url: context.origin.url("/endless")), in: context)
        #expect(unlimitedError == nil && whole == 16 << 20)
        await context.finish()
    }

    @Test("A redirect's own body counts against the limit too")
    func redirectBodyOverLimit() async throws {
        var configuration = HTTPSession.Configuration()
        configuration.maximumResponseBodySize = 100_000
        let context = try await HTTPTestContext.make(configuration: configuration)
        context.origin.setRoute(
            "/moved",
            OriginRoute(
                status: 302,
                headers: [("Location", "/target")],
                body: Data(count: 4 << 20),
                behavior: .init(chunkSize: 64 << 10, chunkedEncoding: true)
            )
        )
        context.origin.setRoute("/target", .data(Data(count: 10), contentType: "image/png"))
        let (error, _) = await run(.init(url: context.origin.url("/moved")), in: context)
        #expect(error?.code == .responseTooLarge, "\(String(describing: error))")
        #expect(context.origin.requests.map(\.path) == ["/moved"])
        await context.finish()
    }
}
