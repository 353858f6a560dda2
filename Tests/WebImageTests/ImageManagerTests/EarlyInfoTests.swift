import Foundation
import Testing
import WebImage
@_spi(WebImageInternals) import WebImageCoders
import WebImageOrigin
import WebImageTestSupport

/// The image's format, size and frame count arrive as soon as the first bytes tell them.
@Suite("ImageManager: early image info", .timeLimit(.minutes(1)))
struct EarlyInfoTests {
    static let noisePNG: Data = {
        let bitmap = GeneratedImages.noise(width: 180, height: 140)
        return try! PNGCoder().encode(DecodedImage(bitmap: bitmap, format: .png), as: .png, options: .init())
    }()

    @Test("An info event on ImageTask.events before the last byte of a slow body; the caller's handler too")
    func beforeTheBodyEnds() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        defer { Task { await origin.stop() } }
        let body = Self.noisePNG
        origin.setRoute(
            "/slow.png",
            .data(body, contentType: "image/png", behavior: .init(chunkSize: 4096, chunkInterval: .milliseconds(40)))
        )
        let handled = Locked<[String]>([])
        var context = ImageContext()
        context.imageInfoHandler = { header, url in
            handled.withLock { $0.append("\(url.path) \(header.size.width)x\(header.size.height)") }
        }
        let task = fixture.manager.imageTask(with: ImageRequest(url: origin.url("/slow.png"), context: context))
        var steps: [String] = []
        for try await event in task.events {
            switch event {
            case .info(let header):
                steps.append("info \(header.format) \(header.size.width)x\(header.size.height) \(header.frameCount)")
            case .progress(let progress):
                // Progress after the info with bytes still to come: it came before the body ended.
                if steps.last?.hasPrefix("info") == true || steps.last == "partial body",
                    progress.completed < body.count
                {
                    steps.append("partial body")
                }
            case .finished(let result): steps.append("finished \(result.image?.width ?? 0)")
            case .preview, .cached: break
            }
        }
        #expect(steps.first == "info png 180x140 1")
        #expect(steps.contains("partial body"), "\(steps)")
        #expect(steps.last == "finished 180")
        #expect(handled.value == ["/slow.png 180x140"])
    }

    @Test("A header spread over several small chunks still gives the info, once, before the body ends")
    func headerOverSeveralChunks() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        defer { Task { await origin.stop() } }
        // The PNG's size is in bytes 16–23: the first 13-byte chunk cannot tell it.
        origin.setRoute(
            "/small-chunks.png",
            .data(
                ManagerImages.redPNG,
                contentType: "image/png",
                behavior: .init(chunkSize: 13, chunkInterval: .milliseconds(5))
            )
        )
        let handled = Locked<[String]>([])
        var context = ImageContext()
        context.imageInfoHandler = { header, _ in
            handled.withLock { $0.append("\(header.format) \(header.size.width)x\(header.size.height)") }
        }
        var infos: [String] = []
        let request = ImageRequest(url: origin.url("/small-chunks.png"), options: .avoidDecodeImage, context: context)
        for try await event in fixture.manager.imageTask(with: request).events {
            if case .info(let header) = event { infos.append("\(header.size.width)x\(header.size.height)") }
        }
        #expect(infos == ["40x30"])
        #expect(handled.value == ["png 40x30"])
    }

    @Test("No info event for a cache hit: nothing was downloaded")
    func notForHits() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        defer { Task { await origin.stop() } }
        origin.setRoute("/a.png", .data(ManagerImages.redPNG, contentType: "image/png", cacheControl: "max-age=600"))
        _ = try await fixture.manager.loadImage(with: origin.url("/a.png"))
        var infos = 0
        for try await event in fixture.manager.imageTask(with: ImageRequest(url: origin.url("/a.png"))).events {
            if case .info = event { infos += 1 }
        }
        #expect(infos == 0)
        #expect(origin.requestCount(for: "/a.png") == 1)
    }
}
