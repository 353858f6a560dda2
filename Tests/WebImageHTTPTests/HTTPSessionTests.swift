import Foundation
import Testing
import WebImageHTTP
import WebImageOrigin
import WebImageTestSupport

@Suite("HTTPSession requests", .timeLimit(.minutes(1)))
struct HTTPSessionTests {
    @Test("GET returns the body and response; default headers are sent")
    func get() async throws {
        let context = try await HTTPTestContext.make()
        context.origin.setRoute("/hello", .data(Data("hi there".utf8), contentType: "text/plain; charset=utf-8"))
        let (response, text) = try await context.session.get(
            context.origin.url("/hello").absoluteString,
            serializer: .string
        )
        #expect(text == "hi there")
        #expect(response.statusCode == 200 && response.mimeType == "text/plain" && response.textEncodingName == "utf-8")
        #expect(response.expectedContentLength == 8)
        #expect(response.httpVersion == "HTTP/1.1")
        let received = try #require(context.origin.requests.last)
        #expect(received.header("user-agent") == "swift-web-image/\(HTTPSession.version)")
        #expect(received.header("accept-encoding") == "gzip, deflate")
        #expect(received.header("accept-language") != nil)
        await context.finish()
    }

    @Test("The origin counts every request; with recording off it keeps none of them")
    func originRecording() async throws {
        let context = try await HTTPTestContext.make()
        context.origin.setRoute("/r", .data(Data("r".utf8), contentType: "text/plain"))
        let url = context.origin.url("/r").absoluteString
        _ = try await context.session.get(url, serializer: .data)
        context.origin.recordsRequests = false
        for _ in 0..<3 { _ = try await context.session.get(url, serializer: .data) }
        #expect(context.origin.requests.count == 1 && context.origin.requestCount(for: "/r") == 1)
        #expect(context.origin.totalRequestCount == 4)
        await context.finish()
    }

    @Test("A session shut down before its first request fails that request without sending it")
    func shutDownBeforeFirstRequest() async throws {
        let context = try await HTTPTestContext.make()
        context.origin.setRoute("/late", .data(Data("late".utf8), contentType: "text/plain"))
        let early = HTTPSession()
        try await early.shutdown()
        await #expect(throws: HTTPSessionError.self) {
            _ = try await early.get(context.origin.url("/late").absoluteString, serializer: .data)
        }
        #expect(context.origin.requestCount(for: "/late") == 0)
        // A session used after another was shut down unused still works.
        let (_, text) = try await context.session.get(context.origin.url("/late").absoluteString, serializer: .string)
        #expect(text == "late" && context.origin.requestCount(for: "/late") == 1)
        await context.finish()
    }

    @Test("baseURL gains a terminal slash; relative and absolute paths resolve as AFNetworking does")
    func baseURL() async throws {
        let context = try await HTTPTestContext.make(basePath: "/v1")
        #expect(context.session.baseURL?.absoluteString.hasSuffix("/v1/") == true)
        #expect(try context.session.url(for: "users").path == "/v1/users")
        #expect(try context.session.url(for: "/root").path == "/root")
        #expect(try context.session.url(for: "https://example.com/x").host == "example.com")
        #expect(throws: HTTPSessionError.self) { try HTTPSession.shared.url(for: "relative/without/base") }
        #expect(throws: HTTPSessionError.self) { try HTTPSession.shared.url(for: "ftp://example.com/x") }
        context.origin.setRoute("/v1/ping", .data(Data("pong".utf8), contentType: "text/plain"))
        let (_, pong) = try await context.session.get("ping", serializer: .string)
        #expect(pong == "pong")
        await context.finish()
    }

    @Test("Every verb reaches the server with its parameters where AFNetworking puts them")
    func verbsAndParameters() async throws {
        let context = try await HTTPTestContext.make()
        let url = context.origin.url("/echo").absoluteString
        let parameters: HTTPParameters = [
            "name": "a b&c", "n": 5, "flag": true, "tags": ["x", "y"], "filter": ["size": "large"],
        ]
        let expectedQuery = "filter%5Bsize%5D=large&flag=1&n=5&name=a%20b%26c&tags%5B%5D=x&tags%5B%5D=y"
        for method in [HTTPRequest.Method.get, .delete] {
            let (_, data) = try await context.session.request(method, url, parameters: parameters, serializer: .data)
            let echo = try HTTPTestContext.echo(data)
            #expect(echo["method"] as? String == method.rawValue)
            #expect(echo["query"] as? String == expectedQuery)
        }
        let head = try await context.session.head(url, parameters: ["q": 1])
        #expect(head.statusCode == 200)
        #expect(context.origin.requests.last?.method == "HEAD" && context.origin.requests.last?.query == "q=1")
        for method in [HTTPRequest.Method.post, .put, .patch] {
            let (_, data) = try await context.session.request(method, url, parameters: parameters, serializer: .data)
            let echo = try HTTPTestContext.echo(data)
            #expect(echo["method"] as? String == method.rawValue)
            #expect(echo["query"] as? String == "")
            let body = Data(base64Encoded: echo["body"] as? String ?? "") ?? Data()
            #expect(String(decoding: body, as: UTF8.self) == expectedQuery)
            #expect((echo["headers"] as? [String: String])?["content-type"] == "application/x-www-form-urlencoded")
        }
        await context.finish()
    }

    @Test("A JSON request body is what the server parses")
    func jsonBody() async throws {
        let context = try await HTTPTestContext.make()
        let (_, data) = try await context.session.post(
            context.origin.url("/echo").absoluteString,
            parameters: ["a": ["b": [1, 2]], "c": nil],
            requestSerializer: .json,
            serializer: .data
        )
        let echo = try HTTPTestContext.echo(data)
        let body = Data(base64Encoded: echo["body"] as? String ?? "") ?? Data()
        let parsed = try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any])
        #expect((parsed["a"] as? [String: Any])?["b"] as? [Int] == [1, 2])
        #expect(parsed["c"] is NSNull)
        #expect((echo["headers"] as? [String: String])?["content-type"] == "application/json")
        await context.finish()
    }

    @Test("JSON responses, with and without nulls")
    func jsonResponse() async throws {
        let context = try await HTTPTestContext.make()
        context.origin.setRoute(
            "/j",
            .data(Data(#"{"a":1.5,"b":null,"c":[true,"x"],"d":0}"#.utf8), contentType: "application/json")
        )
        let url = context.origin.url("/j").absoluteString
        let (_, json) = try await context.session.get(url, serializer: .json)
        #expect(
            json["a"] == .number(1.5) && json["b"] == .null && json["c"]?[0] == .bool(true) && json["d"] == .number(0)
        )
        let (_, trimmed) = try await context.session.get(url, serializer: JSONResponseSerializer(removesNulls: true))
        #expect(trimmed["b"] == nil && trimmed["a"] != nil)
        context.origin.setRoute("/notjson", .data(Data("{oops".utf8), contentType: "application/json"))
        await #expect(throws: HTTPSessionError.self) {
            try await context.session.get(context.origin.url("/notjson").absoluteString, serializer: .json)
        }
        await context.finish()
    }

    @Test("4xx and 5xx fail validation with the status, headers and body")
    func errorStatuses() async throws {
        let context = try await HTTPTestContext.make()
        for status in [404, 500] {
            context.origin.setRoute(
                "/e\(status)",
                OriginRoute(status: status, headers: [("X-Why", "because")], body: Data("detail \(status)".utf8))
            )
            do {
                _ = try await context.session.get(context.origin.url("/e\(status)").absoluteString, serializer: .data)
                Issue.record("status \(status) did not fail")
            } catch {
                #expect(error.code == .unacceptableStatusCode)
                #expect(error.statusCode == status)
                #expect(error.response?.headers[HTTPField.Name("X-Why")!] == "because")
                #expect(error.body == Data("detail \(status)".utf8))
                #expect(error.message.contains("/e\(status)"))
            }
        }
        context.origin.setRoute("/html", .data(Data("<html/>".utf8), contentType: "text/html"))
        await #expect(throws: HTTPSessionError.self) {
            try await context.session.get(context.origin.url("/html").absoluteString, serializer: .image)
        }
        await context.finish()
    }

    @Test("gzip and chunked bodies arrive decoded")
    func gzipAndChunked() async throws {
        let context = try await HTTPTestContext.make()
        let text = String(repeating: "swift-web-image ", count: 5000)
        context.origin.setRoute(
            "/gz",
            OriginRoute(
                headers: [("Content-Type", "text/plain"), ("Content-Encoding", "gzip")],
                body: GZip.stored(Data(text.utf8))
            )
        )
        let (_, unzipped) = try await context.session.get(context.origin.url("/gz").absoluteString, serializer: .string)
        #expect(unzipped == text)
        context.origin.setRoute(
            "/chunked",
            OriginRoute(
                headers: [("Content-Type", "text/plain")],
                body: Data(text.utf8),
                behavior: .init(chunkSize: 1000, chunkedEncoding: true)
            )
        )
        let (response, chunked) = try await context.session.get(
            context.origin.url("/chunked").absoluteString,
            serializer: .string
        )
        #expect(chunked == text)
        #expect(response.expectedContentLength == nil)
        await context.finish()
    }

    @Test("A gzip bomb and a corrupt gzip body fail with the cause in words")
    func decompressionFailures() async throws {
        let context = try await HTTPTestContext.make()
        let bomb = GZip.zeros(count: 64 << 20)  // 64 MiB of zeros in about 400 KB
        #expect(bomb.count < 1 << 20)
        context.origin.setRoute(
            "/bomb",
            OriginRoute(
                headers: [("Content-Type", "application/octet-stream"), ("Content-Encoding", "gzip")],
                body: bomb
            )
        )
        let bombError = await #expect(throws: HTTPSessionError.self) {
            _ = try await context.session.get(context.origin.url("/bomb").absoluteString, serializer: .data)
        }
        #expect(bombError?.code == .responseTooLarge)
        #expect(bombError?.message.contains("decompression limit") == true)

        var corrupt = GZip.stored(Data(repeating: 7, count: 1000))
        corrupt[10] = 0x07  // BTYPE 11: a reserved block type
        context.origin.setRoute(
            "/corrupt",
            OriginRoute(headers: [("Content-Type", "text/plain"), ("Content-Encoding", "gzip")], body: corrupt)
        )
        let corruptError = await #expect(throws: HTTPSessionError.self) {
            _ = try await context.session.get(context.origin.url("/corrupt").absoluteString, serializer: .data)
        }
        #expect(corruptError?.message.contains("cannot be decompressed") == true)
        await context.finish()
    }

    @Test("A body shorter than its Content-Length fails with connectionLost")
    func truncatedBody() async throws {
        let context = try await HTTPTestContext.make()
        context.origin.setRoute(
            "/short",
            OriginRoute(body: Data(count: 50_000), behavior: .init(truncateAfter: 10_000))
        )
        do {
            _ = try await context.session.get(context.origin.url("/short").absoluteString, serializer: .data)
            Issue.record("a truncated body succeeded")
        } catch {
            #expect(error.code == .connectionLost, "\(error.message)")
        }
        await context.finish()
    }

    @Test("A server that never answers times out within the timeout plus a margin")
    func timeout() async throws {
        var configuration = HTTPSession.Configuration()
        configuration.requestTimeout = .milliseconds(500)
        let context = try await HTTPTestContext.make(configuration: configuration)
        context.origin.setRoute("/stall", OriginRoute(behavior: .init(stall: true)))
        let clock = ContinuousClock()
        let start = clock.now
        do {
            _ = try await context.session.get(context.origin.url("/stall").absoluteString, serializer: .data)
            Issue.record("a stalled request succeeded")
        } catch {
            #expect(error.code == .timedOut)
            // The request timeout ended it, not the read timeout (60 s).
            #expect(error.message.contains("no complete response within 0.5 seconds"), "\(error.message)")
        }
        // A hang would never end; the margin is wide because the suite shares two cores with
        // every other suite (a CI run took 10.5 s), and under the 60 s read timeout.
        #expect(clock.now - start < .seconds(40))
        await context.finish()
    }

    @Test("Nothing listening is cannotConnect")
    func connectionRefused() async throws {
        let closed = try ClosedPort()
        defer { closed.release() }
        do {
            _ = try await HTTPSession.shared.get("http://127.0.0.1:\(closed.port)/gone", serializer: .data)
            Issue.record("a closed port answered")
        } catch {
            #expect(error.code == .cannotConnect, "\(error)")
        }
    }

    @Test("Basic authentication answers the challenge with the session's credential")
    func basicAuthentication() async throws {
        var configuration = HTTPSession.Configuration()
        configuration.credential = HTTPCredential(user: "ada", password: "lovelace")
        let context = try await HTTPTestContext.make(configuration: configuration)
        context.origin.setRoute(
            "/private",
            OriginRoute(body: Data("secret".utf8), behavior: .init(requiredBasicAuth: ("ada", "lovelace")))
        )
        let (_, text) = try await context.session.get(
            context.origin.url("/private").absoluteString,
            serializer: .string
        )
        #expect(text == "secret")
        #expect(context.origin.requestCount(for: "/private") == 2)

        let anonymous = HTTPSession()
        do {
            _ = try await anonymous.get(context.origin.url("/private").absoluteString, serializer: .string)
            Issue.record("no credential, yet it succeeded")
        } catch {
            #expect(error.statusCode == 401)
        }
        try await anonymous.shutdown()
        await context.finish()
    }
}

@Suite("XML, property-list and compound serializers", .timeLimit(.minutes(1)))
struct OtherSerializerTests {
    @Test("XML and property lists parse; a plist request body is what the server parses")
    func xmlAndPropertyLists() async throws {
        let context = try await HTTPTestContext.make()
        context.origin.setRoute(
            "/feed",
            .data(
                Data(
                    #"<?xml version="1.0"?><feed kind="news"><item id="1">First</item><item id="2">Second</item></feed>"#
                        .utf8
                ),
                contentType: "application/xml"
            )
        )
        let (_, feed) = try await context.session.get(
            context.origin.url("/feed").absoluteString,
            serializer: XMLResponseSerializer()
        )
        #expect(feed.name == "feed" && feed.attributes["kind"] == "news")
        #expect(feed.children.map(\.text) == ["First", "Second"] && feed.children[1].attributes["id"] == "2")

        let plist = try PropertyListSerialization.data(
            fromPropertyList: ["name": "Ada", "count": 3, "one": 1, "zero": 0, "ok": true],
            format: .xml,
            options: 0
        )
        context.origin.setRoute("/plist", .data(plist, contentType: "application/x-plist"))
        let (_, value) = try await context.session.get(
            context.origin.url("/plist").absoluteString,
            serializer: PropertyListResponseSerializer()
        )
        #expect(value["name"] == .string("Ada") && value["count"] == .integer(3) && value["ok"] == .bool(true))
        #expect(value["one"] == .integer(1) && value["zero"] == .integer(0), "integers 0 and 1 are not booleans")

        let (_, echoed) = try await context.session.post(
            context.origin.url("/echo").absoluteString,
            parameters: ["a": 1, "b": ["x", "y"]],
            requestSerializer: PropertyListRequestSerializer(),
            serializer: .data
        )
        let body = Data(base64Encoded: try HTTPTestContext.echo(echoed)["body"] as? String ?? "") ?? Data()
        let parsed = try PropertyListSerialization.propertyList(from: body, format: nil) as? [String: Any]
        #expect(parsed?["a"] as? Int == 1 && parsed?["b"] as? [String] == ["x", "y"])

        let (_, compound) = try await context.session.get(
            context.origin.url("/feed").absoluteString,
            serializer: CompoundResponseSerializer()
        )
        if case .xml(let root) = compound {
            #expect(root.name == "feed")
        } else {
            Issue.record("expected XML, got \(compound)")
        }
        context.origin.setRoute("/bad", .data(Data("<feed><unclosed>".utf8), contentType: "text/xml"))
        await #expect(throws: HTTPSessionError.self) {
            try await context.session.get(
                context.origin.url("/bad").absoluteString,
                serializer: XMLResponseSerializer()
            )
        }
        await context.finish()
    }
}
