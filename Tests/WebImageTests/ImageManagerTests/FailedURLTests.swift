import Foundation
import Testing
import WebImage
import WebImageOrigin
import WebImageTestSupport

/// The failed-URL list forgets: each entry expires by its cause, on a clock the test moves.
@Suite("ImageManager: failed URLs expire", .timeLimit(.minutes(1)))
struct FailedURLTests {
    @Test("404 is remembered for an hour, undecodable data for a day; the cause is kept and reported")
    func expiry() async throws {
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let clock = Locked(start)
        var configuration = ImageManager.Configuration()
        configuration.now = { clock.value }
        let fixture = try ManagerFixture(configuration: configuration)
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        origin.setRoute("/bad.png", .data(Data("not an image".utf8), contentType: "image/png"))
        let (missing, bad) = (origin.url("/missing.png"), origin.url("/bad.png"))
        for url in [missing, bad] {
            await #expect(throws: WebImageError.self) { try await fixture.manager.loadImage(with: url) }
        }
        let failure = try #require(fixture.manager.failure(for: missing))
        #expect(failure.error.statusCode == 404)
        #expect(failure.failedAt == start)
        #expect(failure.expiresAt == start.addingTimeInterval(3600))
        #expect(fixture.manager.failure(for: bad)?.expiresAt == start.addingTimeInterval(86_400))
        #expect(Set(fixture.manager.failures.map(\.url)) == [missing, bad])

        // Refused at once, naming the first failure.
        do {
            _ = try await fixture.manager.loadImage(with: missing)
            Issue.record("a failed URL loaded")
        } catch {
            #expect(error.code == .blackListed)
            #expect(error.statusCode == 404)
            #expect(error.message.contains("404"), "\(error.message)")
        }
        #expect(origin.requestCount(for: "/missing.png") == 1)

        // An hour later the 404 is tried again; the bad data is still remembered.
        clock.withLock { $0 = start.addingTimeInterval(3601) }
        #expect(fixture.manager.failure(for: missing) == nil)
        await #expect(throws: WebImageError.self) { try await fixture.manager.loadImage(with: missing) }
        #expect(origin.requestCount(for: "/missing.png") == 2)
        do {
            _ = try await fixture.manager.loadImage(with: bad)
        } catch {
            #expect(error.code == .blackListed)
            #expect(error.coderError != nil, "the decoder's reason is kept")
        }
        #expect(origin.requestCount(for: "/bad.png") == 1)

        // The second 404 is remembered afresh; removing it by hand forgets it at once.
        #expect(fixture.manager.failure(for: missing)?.failedAt == start.addingTimeInterval(3601))
        fixture.manager.removeFailedURL(missing)
        #expect(fixture.manager.failedURLs == [bad])
        // A day after its failure, the bad data is forgotten too.
        clock.withLock { $0 = start.addingTimeInterval(86_401) }
        #expect(fixture.manager.failure(for: bad) == nil)
        #expect(fixture.manager.failures.isEmpty)
        await origin.stop()
    }

    @Test("The policy's durations are the caller's to set")
    func policy() {
        var policy = FailedURLPolicy(notFound: .seconds(5), undecodable: .seconds(7), other: .seconds(9))
        let notFound = WebImageError(.invalidDownloadStatusCode, url: nil, message: "gone", statusCode: 410)
        let forbidden = WebImageError(.invalidDownloadStatusCode, url: nil, message: "no", statusCode: 403)
        let bad = WebImageError(.badImageData, url: nil, message: "bad")
        #expect(policy.duration(for: notFound) == .seconds(5))
        #expect(policy.duration(for: bad) == .seconds(7))
        #expect(policy.duration(for: forbidden) == .seconds(9))
        policy.notFound = .zero
        #expect(policy.duration(for: notFound) == .zero)
    }
}
