import Foundation
import Testing
@_spi(WebImageInternals) import WebImageCoders
import WebImageHTTP
import WebImageOrigin
import WebImageTestSupport

@Suite("Task metrics and the image serializer", .timeLimit(.minutes(1)))
struct TaskMetricsTests {
    @Test("Metrics count the redirects followed, the body bytes each way, and times bounded by the origin's delay")
    func metricsValues() async throws {
        try await HTTPTestContext.with { context in
            let payload = Data((0..<5_000).map { UInt8(truncatingIfNeeded: $0 * 31) })
            context.origin.setRoute("/r1", .redirect(to: "/r2", status: 307))
            context.origin.setRoute("/r2", .redirect(to: "/final", status: 307))
            context.origin.setRoute(
                "/final",
                OriginRoute(
                    headers: [("Content-Type", "application/octet-stream")],
                    body: payload,
                    behavior: .init(delay: .milliseconds(150))
                )
            )
            let delegate = RecordingDelegate()
            let before = Date()
            let upload = Data(repeating: 7, count: 1_000)
            let (data, response) = try await context.session.data(
                for: .init(url: context.origin.url("/r1"), method: .post, body: .data(upload)),
                delegate: delegate
            )
            let after = Date()
            #expect(data == payload && response.url.path == "/final")
            #expect(context.origin.requests.map(\.path) == ["/r1", "/r2", "/final"])
            let metrics = try #require(delegate.metrics.withLock { $0.first })
            #expect(metrics.redirectCount == 2)
            #expect(metrics.bytesReceived == 5_000)
            #expect(metrics.bytesSent == 1_000, "the body of the request that was answered")
            #expect(metrics.startDate >= before.addingTimeInterval(-0.001) && metrics.startDate <= after)
            let responseStart = try #require(metrics.responseStartInterval)
            #expect(responseStart >= .milliseconds(150) && responseStart <= metrics.duration)
            #expect(metrics.duration <= .seconds(after.timeIntervalSince(before)) + .milliseconds(1))

            // A failure still reports what was received before it.
            context.origin.setRoute(
                "/cut",
                OriginRoute(
                    headers: [("Content-Type", "application/octet-stream")],
                    body: payload,
                    behavior: .init(chunkSize: 1_000, truncateAfter: 3_000)
                )
            )
            let failing = RecordingDelegate()
            await #expect(throws: HTTPSessionError.self) {
                try await context.session.data(for: .init(url: context.origin.url("/cut")), delegate: failing)
            }
            let cut = try #require(failing.metrics.withLock { $0.first })
            // What arrived before the cut: all 3,000 bytes, unless the closing connection
            // dropped some unread (seen once in CI): the metrics count what the task received.
            let received = failing.state.withLock { $0.chunks.reduce(0) { $0 + $1.count } }
            #expect(cut.redirectCount == 0 && cut.bytesReceived == Int64(received), "\(cut)")
            #expect(received <= 3_000)
        }
    }

    @Test("The image serializer decodes a PNG, a JPEG and an image sent as application/octet-stream")
    func imageSerializer() async throws {
        try await HTTPTestContext.with { context in
            let bitmap = GeneratedImages.gradient(width: 48, height: 32)
            let png = try PNGCoder().encode(DecodedImage(bitmap: bitmap, format: .png), as: .png, options: .init())
            let jpeg = try JPEGCoder().encode(DecodedImage(bitmap: bitmap, format: .jpeg), as: .jpeg, options: .init())
            context.origin.setRoute("/a.png", .data(png, contentType: "image/png"))
            context.origin.setRoute("/a.jpg", .data(jpeg, contentType: "image/jpeg"))
            context.origin.setRoute("/a.bin", .data(png, contentType: "application/octet-stream"))
            for (path, format) in [("/a.png", ImageFormat.png), ("/a.jpg", .jpeg), ("/a.bin", .png)] {
                let (response, image) = try await context.session.get(
                    context.origin.url(path).absoluteString,
                    serializer: .image
                )
                #expect(response.statusCode == 200)
                #expect(image.width == 48 && image.height == 32 && image.format == format, "\(path)")
            }
            let (_, thumbnail) = try await context.session.get(
                context.origin.url("/a.jpg").absoluteString,
                serializer: ImageResponseSerializer(
                    options: .init(thumbnailPixelSize: PixelSize(width: 12, height: 12))
                )
            )
            #expect(thumbnail.width <= 12 && thumbnail.height <= 12 && thumbnail.width > 0)
        }
    }
}
