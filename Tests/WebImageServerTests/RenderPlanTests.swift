import Foundation
import Testing
import WebImage
import WebImageCoders
import WebImageHTTP
import WebImageOrigin
import WebImageTestSupport

@testable import WebImageServer

/// A request's render is planned once: its geometry, decode and memory come from one
/// ``RenderPlan``, and the render computes geometry again only for what the pixels tell.
@Suite("webimage serve: one render plan per request", .timeLimit(.minutes(2)))
struct RenderPlanTests {
    static func jpeg(width: Int, height: Int) throws -> Data {
        try JPEGCoder().encode(
            DecodedImage(bitmap: GeneratedImages.gradient(width: width, height: height), format: .jpeg),
            as: .jpeg,
            options: .init(quality: 0.9)
        )
    }

    /// `webimage_geometry_computations_total` as the metrics endpoint serves it.
    static func geometries(_ metrics: ProxyMetrics) -> Int {
        let line = metrics.exposition().split(separator: "\n").first {
            $0.hasPrefix("webimage_geometry_computations_total ")
        }
        return line.flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0
    }

    @Test("A resize of a JPEG computes its geometry once; a trim adds one for the trimmed size")
    func geometryComputedOncePerRequest() async throws {
        let fixture = try await ImageProxyServerTests.start()
        do {
            fixture.origin.setRoute(
                "/photo.jpg",
                .data(try Self.jpeg(width: 1200, height: 800), contentType: "image/jpeg")
            )
            let metrics = fixture.proxy.metrics
            let before = Self.geometries(metrics)
            let (response, body) = try await fixture.get(fixture.url("rs:fit:300:300", "/photo.jpg"))
            #expect(response.statusCode == 200)
            let image = try ImageCodersManager.shared.decode(body)
            #expect(image.width == 300 && image.height == 200)
            #expect(
                Self.geometries(metrics) - before == 1,
                "planned once, used by the memory check, the decode and the resize"
            )

            let beforeTrim = Self.geometries(metrics)
            let (trimmed, _) = try await fixture.get(fixture.url("t:10/rs:fit:100:100", "/photo.jpg"))
            #expect(trimmed.statusCode == 200)
            #expect(Self.geometries(metrics) - beforeTrim <= 2, "the plan, and the trimmed size if the trim cut")
            #expect(metrics.exposition().contains("webimage_geometry_computations_total"))
        } catch {
            Issue.record(error)
        }
        await fixture.stop()
    }

    @Test("The plan fixes the decode size and memory from one geometry; an unknown orientation plans both ways")
    func planForHeader() async throws {
        let fixture = try await ImageProxyServerTests.start()
        let proxy = fixture.proxy
        let options = try ProcessingOptionsTests.options("rs:fit:300:300")
        let request = ImageProxy.RenderRequest(
            options: options,
            choice: OutputFormatChoice(format: .jpeg, variesWithAccept: false),
            quality: 80,
            watermark: nil
        )
        let known = try #require(ImageHeader(try Self.jpeg(width: 1200, height: 800)))
        let plan = try proxy.plan(request, header: known)
        #expect(plan.geometries.count == 1)
        #expect(plan.geometries[0].geometry.output == PixelSize(width: 300, height: 200))
        #expect(plan.decoding.shrinkOnLoadMinimumSize == PixelSize(width: 300, height: 200))
        #expect(plan.decodedSize.width < 1200, "shrink on load: \(plan.decodedSize)")
        #expect(plan.memory > 0)

        var unknown = known
        unknown.orientation = nil
        let both = try proxy.plan(request, header: unknown)
        #expect(both.geometries.map(\.swapsDimensions) == [false, true])
        #expect(both.geometry(for: known.size, orientation: .right)?.output == PixelSize(width: 200, height: 300))
        #expect(both.geometry(for: PixelSize(width: 10, height: 10), orientation: .up) == nil)
        await fixture.stop()
    }

    @Test("A source we cannot write becomes PNG when the result may be transparent, as imgproxy decides")
    func outputFormatForUnwritableSources() async throws {
        let fixture = try await ImageProxyServerTests.start()
        let header = try #require(ImageHeader(try Self.jpeg(width: 400, height: 300)))
        func format(_ text: String, alpha: Bool) throws -> ImageFormat {
            let request = ImageProxy.RenderRequest(
                options: try ProcessingOptionsTests.options(text),
                choice: OutputFormatChoice(format: .unknown, variesWithAccept: false),
                quality: 80,
                watermark: nil
            )
            return try fixture.proxy.plan(request, header: header).outputFormat(sourceHasAlpha: alpha)
        }
        #expect(try format("w:100", alpha: false) == .jpeg)
        #expect(try format("w:100", alpha: true) == .png)
        #expect(try format("rs:fit:500:500:0:1", alpha: false) == .png, "extend leaves transparent bands")
        #expect(try format("pd:10", alpha: false) == .png, "padding is transparent without a background")
        #expect(try format("pd:10/bg:ffffff", alpha: true) == .jpeg, "a background flattens everything")
        await fixture.stop()
    }
}
