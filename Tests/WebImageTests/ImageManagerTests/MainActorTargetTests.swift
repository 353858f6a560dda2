import Foundation
import Testing
import WebImage
import WebImageOrigin
import WebImageTestSupport

/// A view-like main-actor class: no `nonisolated`, no locks.
@MainActor
final class MainActorView: MainActorImageTarget {
    var shown: [Int] = []

    func display(_ image: DecodedImage?) {
        MainActor.assertIsolated()
        shown.append(image?.width ?? 0)
    }
}

@Suite("MainActorImageTarget", .timeLimit(.minutes(1)))
@MainActor
struct MainActorTargetTests {
    @Test("Display and completion run on the main actor; a newer load cancels the older, which never shows")
    func replacesOlderLoad() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        let gate = OriginGate()
        origin.setRoute("/slow.png", DownloaderFixtures.route(behavior: .init(gate: gate)))
        origin.setRoute("/a.png", .data(ManagerImages.redPNG, contentType: "image/png"))
        let view = MainActorView()
        let placeholder = DecodedImage(bitmap: GeneratedImages.gradient(width: 1, height: 1), format: .png)
        var outcomes: [String] = []

        view.setImage(with: origin.url("/slow.png"), placeholder: placeholder, manager: fixture.manager) { result in
            outcomes.append("slow \((try? result.get()).map { _ in "ok" } ?? "\(result)")")
        }
        await DownloaderFixtures.wait { origin.requestCount(for: "/slow.png") == 1 }
        let result = await withCheckedContinuation { continuation in
            view.setImage(with: origin.url("/a.png"), placeholder: placeholder, manager: fixture.manager) { result in
                continuation.resume(returning: result)
            }
        }
        #expect(try result.get().image?.width == 40)
        gate.open()
        await DownloaderFixtures.wait { fixture.downloader.currentDownloadCount == 0 }
        #expect(view.shown == [1, 1, 40], "placeholder, placeholder, then the second image only")
        #expect(outcomes.count == 1 && outcomes[0].contains("cancelled"), "\(outcomes)")
        #expect(view.currentImageURL() == origin.url("/a.png"))

        // A memory hit is shown before setImage returns; cancelCurrentImageLoad stops a load.
        view.setImage(with: origin.url("/a.png"), manager: fixture.manager)
        #expect(view.shown.last == 40)
        view.cancelCurrentImageLoad()
        await origin.stop()
    }
}
