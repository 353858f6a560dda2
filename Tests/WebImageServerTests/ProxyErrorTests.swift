import Foundation
import Testing
import WebImage

@testable import WebImageServer

@Suite("ProxyError codes")
struct ProxyErrorTests {
    @Test("Each code answers with one status; errors made from a code carry it")
    func statuses() {
        let expected: [ProxyError.Code: Int] = [
            .badURL: 400, .badOption: 400, .badSignature: 403, .sourceNotAllowed: 403, .sourceForbidden: 403,
            .sourceNotFound: 404, .notFound: 404, .expired: 404, .methodNotAllowed: 405, .notAnImage: 422,
            .limitExceeded: 422, .busy: 429, .cancelled: 499, .encodeFailed: 500, .fallbackFailed: 500,
            .badConfiguration: 500, .sourceFailed: 502, .watermarkFailed: 502, .shuttingDown: 503,
            .codecSelfTestFailed: 503, .timedOut: 504,
        ]
        #expect(Set(expected.keys) == Set(ProxyError.Code.allCases), "every code is listed")
        for code in ProxyError.Code.allCases {
            #expect(code.status == expected[code], "\(code)")
            #expect(ProxyError(code, "why").status == code.status, "\(code)")
        }
    }

    @Test("A source loader's error reaches the proxy whole: code, status and message")
    func loaderErrors() throws {
        let url = try #require(URL(string: "s3://bucket/key.png"))
        for code in ProxyError.Code.allCases where code != .cancelled {
            let reported = ProxyError(code, "the message of \(code)").loaderError(for: url)
            #expect(ImageProxy.proxyError(reported) == ProxyError(code, "the message of \(code)"), "\(code)")
        }
        // A cancellation is the library's own, so the manager treats it as one.
        #expect(ProxyError.cancelled.loaderError(for: url).code == .cancelled)
        #expect(ImageProxy.proxyError(ProxyError.cancelled.loaderError(for: url)) == .cancelled)
        // Any other library error is not taken for a loader's.
        #expect(ProxyError(loaderError: WebImageError(.networkError, url: url, message: "down")) == nil)
    }
}
