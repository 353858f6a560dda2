import Foundation
import Testing
import WebImage
import WebImageCoders
import WebImageHTTP
import WebImageOrigin
import WebImageTestSupport

@testable import WebImageServer

/// What a render allocates is bounded, not only its source: results over the resolution limit
/// are refused before any work, and the rest reserve their canvases from the memory budget.
@Suite("webimage serve: result memory is bounded", .timeLimit(.minutes(2)))
struct ResultMemoryTests {
    /// A 207-byte-class source: a 64×64 PNG.
    static func tinyPNG() throws -> Data {
        try PNGCoder().encode(
            DecodedImage(bitmap: GeneratedImages.gradient(width: 64, height: 64), format: .png),
            as: .png,
            options: .init()
        )
    }

    static func errorMessage(_ body: Data) -> (code: String?, message: String) {
        let object = try? JSONSerialization.jsonObject(with: body) as? [String: [String: String]]
        return (object?["error"]?["code"], object?["error"]?["message"] ?? String(decoding: body, as: UTF8.self))
    }

    @Test("An 8192² enlargement of a 64² PNG is refused with 422 by --max-result-resolution, before any decode")
    func resolutionRefusedBeforeWork() async throws {
        let fixture = try await ImageProxyServerTests.start()
        do {
            fixture.origin.setRoute("/tiny.png", .data(try Self.tinyPNG(), contentType: "image/png"))
            let (response, body) = try await fixture.get(
                fixture.url("rs:fill:8192:8192:1/cb:1", "/tiny.png", suffix: "@webp")
            )
            let error = Self.errorMessage(body)
            #expect(response.statusCode == 422)
            #expect(error.code == "limitExceeded")
            #expect(error.message.contains("--max-result-resolution 50"), "\(error.message)")
            // Nothing was decoded: the decoded-source cache was never consulted.
            #expect(
                !fixture.proxy.metrics.exposition().contains(#"webimage_decoded_source_lookups_total{result="miss"} 1"#)
            )
            // Under the limit it renders.
            let (small, image) = try await fixture.get(fixture.url("rs:fill:256:256:1", "/tiny.png"))
            #expect(small.statusCode == 200)
            #expect(try ImageCodersManager.shared.decode(image).width == 256)
        } catch {
            Issue.record(error)
        }
        await fixture.stop()
    }

    @Test("Six concurrent large enlargements share the memory budget: all answered, never over it")
    func concurrentEnlargementsStayWithinTheBudget() async throws {
        // 1024² results: a 4.2 MB canvas, planned at about 21 MB per render; 50 MB admits two.
        let budget = DecodingMemoryBudget(limit: 50_000_000)
        let fixture = try await ImageProxyServerTests.start {
            $0.memoryBudget = budget
            $0.workers = 6
            $0.limits.processingTimeout = .seconds(120)
        }
        do {
            fixture.origin.setRoute("/tiny.png", .data(try Self.tinyPNG(), contentType: "image/png"))
            let results = try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<6 {
                    let url = fixture.url("rs:fill:1024:1024:1/cb:\(index)", "/tiny.png", suffix: "@png")
                    group.addTask { try await fixture.get(url).0.statusCode }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results == Array(repeating: 200, count: 6))
            #expect(budget.peakBytesInUse <= budget.limit)
            #expect(budget.peakBytesInUse >= 20_000_000, "each render reserved its canvases")
            #expect(budget.bytesInUse == 0, "every reservation was released")
            // A render that alone needs more than the budget is refused, naming it.
            let (response, body) = try await fixture.get(fixture.url("rs:fill:2048:2048:1", "/tiny.png"))
            #expect(response.statusCode == 422)
            #expect(Self.errorMessage(body).message.contains("over the budget of 50 MB"), "\(Self.errorMessage(body))")
        } catch {
            Issue.record(error)
        }
        await fixture.stop()
    }

    @Test("A reservation waiting for room is given up when its task is cancelled; those behind it move up")
    func cancelledWaiterLeavesTheLine() async throws {
        let budget = DecodingMemoryBudget(limit: 100)
        let holder = try #require(await budget.reserveUnlessCancelled(80))
        let large = Task { await budget.reserveUnlessCancelled(60) }
        #expect(await waitUntil { budget.waitingCount == 1 })
        let small = Task { await budget.reserveUnlessCancelled(20) }
        #expect(await waitUntil { budget.waitingCount == 2 })
        // The 60 waits for the holder; cancelling it lets the 20 (which fits now) through.
        large.cancel()
        #expect(await large.value == nil)
        let granted = await small.value
        #expect(granted?.bytes == 20)
        #expect(budget.bytesInUse == 100)
        holder.release()
        granted?.release()
        #expect(budget.bytesInUse == 0 && budget.waitingCount == 0)
    }
}
