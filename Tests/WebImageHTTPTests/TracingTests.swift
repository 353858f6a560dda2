import Foundation
import InMemoryTracing
import Testing
import Tracing
import WebImageHTTP
import WebImageOrigin

@Suite("Request tracing")
struct TracingTests {
    @Test("No tracer unless tracing is bootstrapped; a session's tracer gets one span a request, with its status")
    func spans() async throws {
        // Nothing in the test process bootstraps InstrumentationSystem: no span is made by default.
        #expect(HTTPSession.Configuration().tracer == nil)
        let tracer = InMemoryTracer()
        var configuration = HTTPSession.Configuration()
        configuration.tracer = tracer
        let context = try await HTTPTestContext.make(configuration: configuration)
        context.origin.setRoute("/traced", .data(Data("ok".utf8), contentType: "text/plain"))
        context.origin.setRoute("/missing", OriginRoute(status: 404))
        _ = try await context.session.get(context.origin.url("/traced").absoluteString, serializer: .data)
        _ = try? await context.session.get(context.origin.url("/missing").absoluteString, serializer: .data)
        await context.finish()
        let spans = tracer.finishedSpans
        #expect(spans.map(\.operationName) == ["GET", "GET"])
        #expect(spans.map { $0.attributes.get("http.status_code") } == [.int64(200), .int64(404)])
    }
}
