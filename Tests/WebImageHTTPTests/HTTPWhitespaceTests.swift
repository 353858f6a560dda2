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
}
