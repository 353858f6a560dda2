import Foundation
import Testing
import WebImage
import WebImageOrigin
import WebImageTestSupport

// A hang fails within three minutes; one minute was not enough for 100 rounds while 600 other
// tests shared two cores with a release build (CI22), where each round takes 5 ms alone.
@Suite("Loads that join a download", .timeLimit(.minutes(3)))
struct JoinedLoadTests {
    @Test("A load started while a download of its URL delivers stores the disk entry with its validators")
    func joinedLoadKeepsValidators() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        // One origin and one cache; each round loads its own URL for the first time.
        for round in 0..<100 {
            let path = "/v\(round).png"
            origin.setRoute(
                path,
                OriginRoute(
                    headers: [
                        ("Content-Type", "image/png"), ("ETag", "\"r\(round)\""),
                        ("Last-Modified", "Mon, 23 Nov 2026 10:00:00 GMT"),
                    ],
                    body: ManagerImages.redPNG
                )
            )
            let url = origin.url(path)
            let joined = Locked(false)
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                // A direct caller's completion starts the manager's load on another thread and
                // returns at once: the load arrives while the download still delivers (it starts
                // its own, the result being in before it asked) and may race its completion.
                fixture.downloader.download(with: url) { _, _, _, finished in
                    guard finished else { return }
                    DispatchQueue.global().async {
                        fixture.manager.loadImage(with: url, options: .waitStoreCache) { _, _, _, _, finished, _ in
                            guard finished else { return }
                            joined.withLock { $0 = true }
                            continuation.resume()
                        }
                    }
                }
            }
            #expect(joined.value)
            let entry = await fixture.cache.diskEntry(forKey: url.absoluteString)
            #expect(
                entry?.metadata.etag == "\"r\(round)\"",
                "round \(round), \(origin.requestCount(for: path)) requests"
            )
            #expect(entry?.metadata.lastModified == "Mon, 23 Nov 2026 10:00:00 GMT")
        }
        await origin.stop()
    }
}
