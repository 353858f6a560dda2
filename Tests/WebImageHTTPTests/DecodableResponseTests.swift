import Foundation
import Testing
import WebImageHTTP
import WebImageOrigin

@Suite("Decodable responses", .timeLimit(.minutes(1)))
struct DecodableResponseTests {
    struct Album: Decodable, Sendable, Equatable {
        struct Photo: Decodable, Sendable, Equatable {
            let id: Int
            let takenAt: Date
        }
        let title: String
        let photos: [Photo]
    }

    @Test("A JSON body decodes into a Swift type with the caller's decoder strategies")
    func decodes() async throws {
        try await HTTPTestContext.with { context in
            context.origin.setRoute(
                "/album",
                .data(
                    Data(#"{"title":"Trip","photos":[{"id":1,"taken_at":"2026-11-28T03:00:00Z"}]}"#.utf8),
                    contentType: "application/json; charset=utf-8"
                )
            )
            let decoder = JSONDecoder()
            decoder.keyDecodingStrategy = .convertFromSnakeCase
            decoder.dateDecodingStrategy = .iso8601
            let (response, album) = try await context.session.get(
                context.origin.url("/album").absoluteString,
                serializer: .decodable(Album.self, decoder: decoder)
            )
            #expect(response.statusCode == 200)
            #expect(album.title == "Trip" && album.photos.map(\.id) == [1])
            #expect(album.photos.first?.takenAt == Date(timeIntervalSince1970: 1_795_834_800))
        }
    }

    @Test("A body of the wrong shape fails naming the type, the coding path and the cause")
    func wrongShape() async throws {
        try await HTTPTestContext.with { context in
            let decoder = JSONDecoder()
            decoder.keyDecodingStrategy = .convertFromSnakeCase
            decoder.dateDecodingStrategy = .iso8601
            let cases: [(String, String)] = [
                (#"{"title":"T","photos":[{"id":1,"taken_at":"2026-11-28T03:00:00Z"},{"id":"x"}]}"#, "photos[1].id"),
                (#"{"photos":[]}"#, "title: missing"),
                (#"{"title":null,"photos":[]}"#, "title: expected String, found null"),
                ("{oops", "(top level)"),
            ]
            for (index, (body, words)) in cases.enumerated() {
                context.origin.setRoute("/bad\(index)", .data(Data(body.utf8), contentType: "application/json"))
                do {
                    _ = try await context.session.get(
                        context.origin.url("/bad\(index)").absoluteString,
                        serializer: .decodable(Album.self, decoder: decoder)
                    )
                    Issue.record("\(body) decoded")
                } catch let error as HTTPSessionError {
                    #expect(error.code == .serializationFailed)
                    #expect(error.message.contains("cannot decode Album"), "\(error.message)")
                    #expect(error.message.contains(words), "\(error.message)")
                    #expect(error.body == Data(body.utf8))
                    #expect(error.underlying is DecodingError, "the DecodingError is carried")
                }
            }
        }
    }

    @Test("An empty 204 is HTTPEmptyResponse; for any other type it fails; HTML is refused before decoding")
    func emptyAndContentType() async throws {
        try await HTTPTestContext.with { context in
            context.origin.setRoute("/none", OriginRoute(status: 204, body: Data()))
            let url = context.origin.url("/none").absoluteString
            let (response, empty) = try await context.session.get(url, serializer: .decodable(HTTPEmptyResponse.self))
            #expect(response.statusCode == 204 && empty == HTTPEmptyResponse())
            await #expect {
                try await context.session.get(url, serializer: .decodable(Album.self))
            } throws: { error in
                (error as? HTTPSessionError)?.message.contains("the body is empty; expected Album") == true
            }
            context.origin.setRoute("/page", .data(Data(#"{"title":"T","photos":[]}"#.utf8), contentType: "text/html"))
            await #expect {
                try await context.session.get(
                    context.origin.url("/page").absoluteString,
                    serializer: .decodable(Album.self)
                )
            } throws: { error in
                (error as? HTTPSessionError)?.code == .unacceptableContentType
            }
        }
    }

    @Test("The completion-handler form delivers the decoded value once")
    func completionHandler() async throws {
        try await HTTPTestContext.with { context in
            context.origin.setRoute(
                "/a",
                .data(Data(#"{"title":"A","photos":[]}"#.utf8), contentType: "application/json")
            )
            let title: String = try await withCheckedThrowingContinuation { continuation in
                context.session.get(
                    context.origin.url("/a").absoluteString,
                    serializer: .decodable(Album.self),
                    success: { _, album in continuation.resume(returning: album.title) },
                    failure: { _, error in continuation.resume(throwing: error) }
                )
            }
            #expect(title == "A")
        }
    }
}
