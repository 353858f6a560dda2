import Foundation
import NIOHTTP1
import Testing

@testable import WebImageHTTP

@Suite("Response heads from AsyncHTTPClient")
struct ResponseHeadTests {
    static let commonNames = [
        "Date", "ETag", "Vary", "Server", "Expires", "Connection", "Content-Type", "Last-Modified", "Accept-Ranges",
        "Cache-Control", "Content-Length", "Content-Encoding", "Transfer-Encoding",
    ]

    @Test("Common names as servers spell them are the names HTTPField.Name makes; other spellings go the long way")
    func commonNames() throws {
        for name in Self.commonNames {
            let known = try #require(HTTPField.Name(commonlySpelled: name), "\(name)")
            let checked = try #require(HTTPField.Name(name))
            #expect(known.rawName == checked.rawName && known.canonicalName == checked.canonicalName, "\(name)")
        }
        for other in [
            "content-length", "CONTENT-TYPE", "Etag", "X-Cache", "Age", "Date ", "Dat", "Content-Lengths", "",
        ] {
            #expect(HTTPField.Name(commonlySpelled: other) == nil, "\(other)")
        }
    }

    @Test("A head's fields keep their order, names as sent and values; a name HTTP does not allow is dropped")
    func conversion() {
        let headers = HTTPHeaders([
            ("Server", "nginx"), ("content-type", "image/jpeg"), ("Content-Length", "10"), ("Bad Name", "x"),
            ("ETag", "\"a\""), ("X-Custom", "1"), ("Set-Cookie", "a=1"), ("Set-Cookie", "b=2"), ("Date", ""),
        ])
        let fields = HTTPFields(headers)
        #expect(
            fields.map(\.name.rawName) == [
                "Server", "content-type", "Content-Length", "ETag", "X-Custom", "Set-Cookie", "Set-Cookie", "Date",
            ]
        )
        #expect(fields.map(\.value) == ["nginx", "image/jpeg", "10", "\"a\"", "1", "a=1", "b=2", ""])
        #expect(fields[.contentType] == "image/jpeg" && fields[.contentLength] == "10" && fields[.eTag] == "\"a\"")
        #expect(fields[values: .setCookie] == ["a=1", "b=2"] && fields[.date] == "")
    }
}
