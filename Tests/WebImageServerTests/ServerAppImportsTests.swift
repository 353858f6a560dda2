import Foundation
import NIOHTTP1
import Testing
import WebImage
import WebImageHTTP

/// A Hummingbird or Vapor app imports NIOHTTP1 beside WebImage: `HTTPMethod` must stay
/// NIOHTTP1's (this file would not compile if WebImage or WebImageHTTP declared one too), and
/// the HTTP layer speaks swift-http-types.
@Suite("Server app imports")
struct ServerAppImportsTests {
    @Test("HTTPMethod is NIOHTTP1's; requests take HTTPRequest.Method and HTTPFields")
    func noCollision() throws {
        let nioMethod: HTTPMethod = .POST
        var request = HTTPSession.Request(
            url: try #require(URL(string: "http://127.0.0.1/upload")),
            method: .post,
            headers: [.contentType: "image/png"]
        )
        request.headers[.authorization] = "Bearer token"
        #expect(request.method.rawValue == nioMethod.rawValue)
        #expect(request.headers[.contentType] == "image/png" && request.headers.count == 2)
        #expect(URLEncodedRequestSerializer.methodsEncodingParametersInURI == [.get, .head, .delete])
    }
}
