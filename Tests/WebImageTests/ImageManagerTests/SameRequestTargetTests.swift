import Foundation
import Testing
import WebImage
import WebImageOrigin
import WebImageTestSupport

@Suite("reuseRunningLoad: a target keeps the load already running for the same URL", .timeLimit(.minutes(1)))
struct SameRequestTargetTests {
    @Test("The same URL again keeps the running load: one request, no cancel, both completions get the image")
    func keepsRunningLoad() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        let gate = OriginGate()
        origin.setRoute("/a.png", .data(ManagerImages.bluePNG, contentType: "image/png", behavior: .init(gate: gate)))
        let target = RecordingTarget()
        let outcomes = Locked<[String]>([])
        func record(_ name: String) -> ImageManager.CompletedHandler {
            { image, _, error, _, finished, _ in
                guard finished else { return }
                outcomes.withLock { $0.append("\(name) \(error?.code.rawValue ?? (image == nil ? "no image" : "ok"))") }
            }
        }
        let first = target.setImage(
            with: origin.url("/a.png"),
            placeholder: ManagerImages.red,
            manager: fixture.manager,
            completed: record("first")
        )
        await DownloaderFixtures.wait { origin.requestCount(for: "/a.png") == 1 }
        let second = target.setImage(
            with: origin.url("/a.png"),
            placeholder: ManagerImages.red,
            options: .reuseRunningLoad,
            manager: fixture.manager,
            completed: record("second")
        )
        #expect(first != nil && second === first, "the running operation is returned")
        gate.open()
        await DownloaderFixtures.wait { outcomes.value.count == 2 }
        #expect(outcomes.value == ["first ok", "second ok"])
        #expect(target.shown.value == ["red", "blue"], "the placeholder is not shown again")
        #expect(origin.requestCount(for: "/a.png") == 1)

        // Once it has ended, the same URL is a new load (here a memory hit).
        let third = target.setImage(
            with: origin.url("/a.png"),
            options: .reuseRunningLoad,
            manager: fixture.manager,
            completed: record("third")
        )
        #expect(third !== first)
        await DownloaderFixtures.wait { outcomes.value.count == 3 }
        #expect(outcomes.value.last == "third ok")
        await origin.stop()
    }

    @Test("Without the option, or for another URL, the running load is cancelled and replaced")
    func otherwiseReplaces() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        let gate = OriginGate()
        origin.setRoute("/a.png", .data(ManagerImages.redPNG, contentType: "image/png", behavior: .init(gate: gate)))
        origin.setRoute("/b.png", .data(ManagerImages.bluePNG, contentType: "image/png"))
        let target = RecordingTarget()
        let outcomes = Locked<[String]>([])
        let record: @Sendable (String) -> ImageManager.CompletedHandler = { name in
            { _, _, error, _, finished, _ in
                if finished { outcomes.withLock { $0.append("\(name) \(error?.code.rawValue ?? "ok")") } }
            }
        }
        target.setImage(with: origin.url("/a.png"), manager: fixture.manager, completed: record("a1"))
        await DownloaderFixtures.wait { origin.requestCount(for: "/a.png") == 1 }
        target.setImage(with: origin.url("/a.png"), manager: fixture.manager, completed: record("a2"))
        target.setImage(
            with: origin.url("/b.png"),
            options: .reuseRunningLoad,
            manager: fixture.manager,
            completed: record("b")
        )
        await DownloaderFixtures.wait { outcomes.value.count == 3 }
        gate.open()
        #expect(Set(outcomes.value) == ["a1 cancelled", "a2 cancelled", "b ok"])
        #expect(target.shown.value.last == "blue")
        await origin.stop()
    }
}

@Suite("reuseRunningLoad on a main-actor target", .timeLimit(.minutes(1)))
@MainActor
struct SameRequestMainActorTargetTests {
    @Test("A main-actor target keeps its running load for the same URL; both completions run on the main actor")
    func keepsRunningLoad() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        let gate = OriginGate()
        origin.setRoute("/slow.png", DownloaderFixtures.route(behavior: .init(gate: gate)))
        let view = MainActorView()
        var outcomes: [String] = []
        let first = view.setImage(with: origin.url("/slow.png"), manager: fixture.manager) { result in
            MainActor.assertIsolated()
            outcomes.append("first \((try? result.get()).map { _ in "ok" } ?? "\(result)")")
        }
        await DownloaderFixtures.wait { origin.requestCount(for: "/slow.png") == 1 }
        let second = view.setImage(with: origin.url("/slow.png"), options: .reuseRunningLoad, manager: fixture.manager)
        {
            result in
            MainActor.assertIsolated()
            outcomes.append("second \((try? result.get()).map { _ in "ok" } ?? "\(result)")")
        }
        #expect(second === first)
        gate.open()
        while outcomes.count < 2 { try await Task.sleep(for: .milliseconds(5)) }
        #expect(outcomes == ["first ok", "second ok"])
        #expect(view.shown.count == 2 && view.shown.first == 0, "one placeholder, then the image: \(view.shown)")
        #expect(origin.requestCount(for: "/slow.png") == 1)
        await origin.stop()
    }
}
