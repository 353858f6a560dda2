import Foundation
import Testing
import WebImage
import WebImageCoders
import WebImageHTTP
import WebImageServer
import WebImageTestSupport

/// Numbers in a URL that no integer holds: every one is an answer (a render, 400 or 422), never a
/// trap or a bitmap of 2³¹ pixels a side. The proxy runs in the test process, so a trap fails the
/// whole run.
@Suite("webimage serve: extreme numbers in options", .timeLimit(.minutes(2)))
struct ProxyExtremeOptionsTests {
    @Test("Crops, gravity offsets, watermark scales and spacing, paddings and dprs of 1e30 and 2^64 are answered")
    func extremeNumbers() async throws {
        let mark = try ProxyTrimAndWatermarkTests.mark()
        let budget = DecodingMemoryBudget(limit: 1 << 30)
        let fixture = try await ImageProxyServerTests.start {
            $0.watermark = .data(mark)
            $0.memoryBudget = budget
        }
        defer { Task { await fixture.stop() } }
        let huge = ["1e30", "99999999999999999999", "2147483648"]
        let templates = [
            "c:{}:{}", "c:{}:{}:ce:{}:{}", "g:ce:{}:{}/rs:fill:50:50", "ex:1:ce:{}:{}/w:300", "wm:1:ce:{}:{}:{}",
            "wm:1:re:{}:{}:{}", "wm:1:ce:0:0:{}", "pd:10/dpr:{}", "dpr:{}/el:1/w:10", "w:100/dpr:{}/ex:1",
            "c:{}:{}/el:1/rs:fill:100:100",
        ]
        var statuses: [String: Int] = [:]
        for template in templates {
            for number in huge {
                let options = template.replacingOccurrences(of: "{}", with: number)
                let (response, _) = try await fixture.get(fixture.url(options, "/photo.jpg", suffix: "@png"))
                statuses[options] = response.statusCode
            }
        }
        #expect(statuses.values.allSatisfy { [200, 400, 422].contains($0) }, "\(statuses)")
        // A crop of 1e30 keeps the whole source; a mark scaled 1e30 covers the result, no more.
        let (cropped, croppedBody) = try await fixture.get(fixture.url("c:1e30:1e30", "/photo.jpg", suffix: "@png"))
        let whole = try await fixture.get(fixture.url("", "/photo.jpg", suffix: "@png")).1
        #expect(cropped.statusCode == 200)
        let croppedImage = try ImageCodersManager.shared.decode(croppedBody)
        let wholeImage = try ImageCodersManager.shared.decode(whole)
        #expect(croppedImage.width == wholeImage.width && croppedImage.height == wholeImage.height)
        let covered = try ImageCodersManager.shared.decode(
            try await fixture.get(fixture.url("w:120/wm:1:ce:0:0:1e30", "/photo.jpg", suffix: "@png")).1
        )
        #expect(covered.width == 120)
        #expect(covered.bitmap[60, covered.height / 2] == ProxyTrimAndWatermarkTests.green)
        // Nothing was left reserved, and the server answers after.
        #expect(await waitUntil({ budget.bytesInUse == 0 }, timeout: .seconds(30)))
        let (health, _) = try await fixture.get("\(fixture.server.baseURL)/health")
        #expect(health.statusCode == 200)
        await fixture.stop()
    }
}
