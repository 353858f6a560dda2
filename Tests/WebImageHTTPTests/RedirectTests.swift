import Foundation
import Testing
import WebImageHTTP
import WebImageOrigin
import WebImageTestSupport

@Suite("Redirects", .timeLimit(.minutes(1)))
struct RedirectTests {
    @Test("A chain of redirects is followed to the end")
    func chain() async throws {
        let context = try await HTTPTestContext.make()
        context.origin.setRoute("/a", .redirect(to: "/b", status: 301))
        context.origin.setRoute("/b", .redirect(to: context.origin.url("/c").absoluteString, status: 307))
        context.origin.setRoute("/c", .redirect(to: "d", status: 308))
        context.origin.setRoute("/d", .data(Data("end".utf8), contentType: "text/plain"))
        let delegate = RecordingDelegate()
        let request = HTTPSession.Request(url: context.origin.url("/a"))
        let (data, response) = try await context.session.data(for: request, delegate: delegate)
        #expect(String(decoding: data, as: UTF8.self) == "end")
        #expect(response.url.path == "/d")
        #expect(delegate.state.withLock { $0.redirects.map(\.path) } == ["/b", "/c", "/d"])
        await context.finish()
    }

    @Test("A loop fails with redirectLoop; too many hops with tooManyRedirects")
    func loopsAndLimit() async throws {
        var configuration = HTTPSession.Configuration()
        configuration.redirectPolicy.maximumCount = 3
        let context = try await HTTPTestContext.make(configuration: configuration)
        context.origin.setRoute("/x", .redirect(to: "/y"))
        context.origin.setRoute("/y", .redirect(to: "/x"))
        for index in 0..<5 { context.origin.setRoute("/hop\(index)", .redirect(to: "/hop\(index + 1)")) }
        context.origin.setRoute("/hop5", .data(Data(), contentType: "text/plain"))
        context.origin.setRoute("/self", .redirect(to: "/self"))
        // A loop of two, and a URL redirecting to itself (caught at the first redirect).
        for path in ["/x", "/self"] {
            do {
                _ = try await context.session.get(context.origin.url(path).absoluteString, serializer: .data)
                Issue.record("the loop from \(path) ended")
            } catch {
                #expect(error.code == .redirectLoop, "\(path)")
            }
        }
        #expect(context.origin.requestCount(for: "/self") == 1)
        do {
            _ = try await context.session.get(context.origin.url("/hop0").absoluteString, serializer: .data)
            Issue.record("five hops were allowed")
        } catch {
            #expect(error.code == .tooManyRedirects)
        }
        await context.finish()
    }

    @Test("The delegate can refuse a redirect; the 3xx is then the response")
    func refused() async throws {
        let context = try await HTTPTestContext.make()
        context.origin.setRoute("/moved", .redirect(to: "/there"))
        let delegate = RecordingDelegate(followRedirects: false)
        let (_, response) = try await context.session.data(
            for: .init(url: context.origin.url("/moved")),
            delegate: delegate
        )
        #expect(response.statusCode == 302)
        #expect(context.origin.requestCount(for: "/there") == 0)
        await context.finish()
    }

    @Test("303 turns POST into GET; 307 keeps the method and body")
    func methodRewriting() async throws {
        let context = try await HTTPTestContext.make()
        context.origin.setRoute("/see-other", .redirect(to: "/echo", status: 303))
        context.origin.setRoute("/temporary", .redirect(to: "/echo", status: 307))
        let body = HTTPSession.Request.Body.data(Data("payload".utf8))
        let (seeOther, _) = try await context.session.data(
            for: .init(url: context.origin.url("/see-other"), method: .post, body: body)
        )
        #expect(try HTTPTestContext.echo(seeOther)["method"] as? String == "GET")
        let (temporary, _) = try await context.session.data(
            for: .init(url: context.origin.url("/temporary"), method: .post, body: body)
        )
        let echo = try HTTPTestContext.echo(temporary)
        #expect(echo["method"] as? String == "POST")
        #expect(echo["body"] as? String == Data("payload".utf8).base64EncodedString())
        await context.finish()
    }
}
