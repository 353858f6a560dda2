import Foundation
import HTTPTypes
import Testing

@testable import WebImageHTTP

@Suite("Header values: HTTP's optional whitespace")
struct HTTPWhitespaceTests {
    @Test("Spaces and tabs go from both ends, nothing else does; empty and all-blank values end empty")
    func trimming() {
        #expect(" \timage/jpeg\t ".trimmingHTTPWhitespace() == "image/jpeg")
        #expect("a b".trimmingHTTPWhitespace() == "a b")
        #expect("\u{A0}x\u{A0}".trimmingHTTPWhitespace() == "\u{A0}x\u{A0}")  // not HTTP whitespace
        #expect(" \t ".trimmingHTTPWhitespace().isEmpty && "".trimmingHTTPWhitespace().isEmpty)
        let text = "x;  max-age=5 ,y"
        let parts = text.split(separator: ";")
        #expect(parts[1].trimmingHTTPWhitespace() == "max-age=5 ,y")
        #expect("ünïcode ".trimmingHTTPWhitespace() == "ünïcode")
    }

    @Test("mimeType and textEncodingName read a Content-Type with odd spacing and case")
    func contentType() throws {
        var headers = HTTPFields()
        headers[.contentType] = "\tImage/JPEG ;  Charset=\"UTF-8\" "
        let url = try #require(URL(string: "http://127.0.0.1/a.jpg"))
        let response = HTTPSession.Response(url: url, statusCode: 200, headers: headers)
        #expect(response.mimeType == "image/jpeg")
        #expect(response.textEncodingName == "utf-8")
    }

    @Test("mimeType: the first Content-Type's essence; none for an empty one or one of parameters alone")
    func contentTypeEdges() {
        func mimeType(_ values: [String]) -> String? { Self.response(.contentType, values).mimeType }
        #expect(mimeType(["image/webp", "image/png"]) == "image/webp")
        #expect(mimeType(["image/png"]) == "image/png")
        #expect(mimeType(["IMAGE/ÄVIF; x=1"]) == "image/ävif")
        #expect(mimeType([]) == nil && mimeType([""]) == nil && mimeType([" \t "]) == nil)
        #expect(mimeType(["; charset=utf-8"]) == nil)
    }

    @Test("expectedContentLength: the first valid Content-Length with its blanks; none for others")
    func contentLength() {
        func length(_ values: [String]) -> Int64? { Self.response(.contentLength, values).expectedContentLength }
        #expect(length(["1234"]) == 1234 && length([" 56\t"]) == 56 && length(["7", "8"]) == 7)
        #expect(length([]) == nil && length(["-1"]) == nil && length(["12a"]) == nil && length([""]) == nil)
        // Read once and kept: a change to the headers is seen.
        var response = Self.response(.contentLength, ["12"])
        response.headers[.contentLength] = "34"
        #expect(response.expectedContentLength == 34)
        response.headers[.contentLength] = nil
        #expect(response.expectedContentLength == nil)
        #expect(response == Self.response(.contentType, []))
    }

    /// A 200 response with a field named `name` for each of `values`, in order.
    private static func response(_ name: HTTPField.Name, _ values: [String]) -> HTTPSession.Response {
        var headers = HTTPFields()
        for value in values { headers.append(HTTPField(name: name, value: value)) }
        return HTTPSession.Response(url: URL(filePath: "/a"), statusCode: 200, headers: headers)
    }
}
