import Foundation
import Testing
@_spi(WebImageInternals) import WebImageCoders
import WebImageOrigin
import WebImageTestSupport

@testable import WebImage

/// Decoding is a stage after the download: callers that want different images of one URL share
/// its request and get one decode per distinct setting.
@Suite("One download, a decode per setting", .timeLimit(.minutes(2)))
struct SharedDownloadTests {
    static let photo: Data = {
        let bitmap = GeneratedImages.gradient(width: 400, height: 300)
        return try! PNGCoder().encode(DecodedImage(bitmap: bitmap, format: .png), as: .png, options: .init())
    }()

    static func thumbnail(_ side: Int) -> ImageContext {
        var context = ImageContext()
        context.thumbnailPixelSize = PixelSize(width: side, height: side)
        return context
    }

    /// What one caller got: the image's size (or "none") and whether it had the bytes.
    typealias Outcome = (size: String, hasBytes: Bool)

    @Test("Two thumbnail sizes, a full decode and the bytes alone, at once: one request, each caller its own image")
    func sizesShareTheRequest() async throws {
        let origin = try await OriginServer.start()
        defer { Task { await origin.stop() } }
        let gate = OriginGate()
        origin.setRoute("/photo.png", .data(Self.photo, contentType: "image/png", behavior: .init(gate: gate)))
        let downloader = DownloaderFixtures.downloader()
        let outcomes = Locked<[String: Outcome]>([:])
        let callers: [(String, ImageOptions, ImageContext)] = [
            ("100", [], Self.thumbnail(100)),
            ("200", [], Self.thumbnail(200)),
            ("200 again", [], Self.thumbnail(200)),
            ("full", [], ImageContext()),
            ("bytes", .avoidDecodeImage, ImageContext()),
        ]
        // Every caller joins before the origin answers.
        for (name, options, context) in callers {
            downloader.download(with: origin.url("/photo.png"), options: options, context: context) {
                image,
                data,
                error,
                finished in
                guard finished else { return }
                let size = image.map { "\($0.width)x\($0.height)" } ?? (error.map { "\($0.code)" } ?? "none")
                outcomes.withLock { $0[name] = (size, data == Self.photo) }
            }
        }
        #expect(downloader.currentDownloadCount == 1)
        await DownloaderFixtures.wait { origin.requestCount(for: "/photo.png") == 1 }
        gate.open()
        await DownloaderFixtures.wait { outcomes.value.count == callers.count }
        let got = outcomes.value
        #expect(got["100"]?.size == "100x75")
        #expect(got["200"]?.size == "200x150" && got["200 again"]?.size == "200x150")
        #expect(got["full"]?.size == "400x300")
        #expect(got["bytes"]?.size == "none")
        #expect(got.values.allSatisfy { $0.hasBytes }, "every caller gets the downloaded bytes")
        #expect(origin.requestCount(for: "/photo.png") == 1)
    }

    @Test("A caller that leaves before the decode does not stop the other setting's decode")
    func leavingCallerKeepsOthers() async throws {
        let origin = try await OriginServer.start()
        defer { Task { await origin.stop() } }
        let gate = OriginGate()
        origin.setRoute("/photo.png", .data(Self.photo, contentType: "image/png", behavior: .init(gate: gate)))
        let downloader = DownloaderFixtures.downloader()
        let results = Locked<[String]>([])
        let leaving = downloader.download(with: origin.url("/photo.png"), context: Self.thumbnail(50)) {
            image,
            _,
            error,
            finished in
            if finished {
                results.withLock { $0.append("50: \(error.map { "\($0.code)" } ?? "\(image?.width ?? 0)")") }
            }
        }
        downloader.download(with: origin.url("/photo.png"), context: Self.thumbnail(120)) {
            image,
            _,
            error,
            finished in
            if finished {
                results.withLock { $0.append("120: \(error.map { "\($0.code)" } ?? "\(image?.width ?? 0)")") }
            }
        }
        await DownloaderFixtures.wait { origin.requestCount(for: "/photo.png") == 1 }
        leaving?.cancel()
        gate.open()
        await DownloaderFixtures.wait { results.value.count == 2 }
        #expect(results.value.sorted() == ["120: 120", "50: cancelled"])
        #expect(origin.requestCount(for: "/photo.png") == 1)
    }

    @Test("ImageManager: two thumbnail sizes of one URL at once, and a thumbnail beside a full load, make one request")
    func managerLoadsShareTheRequest() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        defer { Task { await origin.stop() } }
        for path in ["/sizes.png", "/mixed.png"] {
            let gate = OriginGate()
            origin.setRoute(path, .data(Self.photo, contentType: "image/png", behavior: .init(gate: gate)))
            let url = origin.url(path)
            let contexts =
                path == "/sizes.png" ? [Self.thumbnail(64), Self.thumbnail(160)] : [Self.thumbnail(64), .init()]
            let loads = contexts.map { context in
                Task { try await fixture.manager.loadImage(with: url, context: context).image }
            }
            // Both loads reach the downloader while the origin holds its answer.
            await DownloaderFixtures.wait { fixture.downloader.waitingCallerCount(for: url) == 2 }
            #expect(fixture.downloader.waitingCallerCount(for: url) == 2)
            gate.open()
            var widths: [Int] = []
            for load in loads { widths.append(try await load.value?.width ?? 0) }
            #expect(widths == (path == "/sizes.png" ? [64, 160] : [64, 400]), "\(path)")
            #expect(origin.requestCount(for: path) == 1, "\(path)")
        }
    }
}
