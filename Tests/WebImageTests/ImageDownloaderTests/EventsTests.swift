import Foundation
import Testing
import WebImage
import WebImageHTTP
import WebImageOrigin
import WebImageTestSupport

@Suite("ImageDownloader events", .timeLimit(.minutes(1)))
struct EventsTests {
    @Test("Start, response, image info, stop and finish arrive in order, as a stream and as notifications")
    func events() async throws {
        let origin = try await OriginServer.start()
        origin.setRoute("/e.png", DownloaderFixtures.route())
        let downloader = DownloaderFixtures.downloader()
        let stream = downloader.downloadEvents
        let notified = Locked<[String]>([])
        let observer = NotificationCenter.default.addObserver(
            forName: .imageDownloadStart,
            object: downloader,
            queue: nil
        ) { note in
            let url = note.userInfo?["url"] as? URL
            notified.withLock { $0.append(url?.path ?? "?") }
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        _ = try await downloader.image(with: origin.url("/e.png"))
        var names: [String] = []
        for await event in stream {
            switch event {
            case .started: names.append("started")
            case .receivedResponse(_, let response): names.append("response \(response.statusCode)")
            case .stopped: names.append("stopped")
            case .finished:
                names.append("finished")
            case .receivedImageInfo(_, let header):
                names.append("info \(header.format) \(header.size.width)x\(header.size.height)")
            }
            if names.count == 5 { break }
        }
        #expect(names == ["started", "response 200", "info png 32x24", "stopped", "finished"])
        #expect(notified.value == ["/e.png"])
        await origin.stop()
    }

    @Test("With postsNotifications off, nothing is posted and the event stream still sees every event")
    func notificationsOff() async throws {
        let origin = try await OriginServer.start()
        origin.setRoute("/quiet.png", DownloaderFixtures.route())
        var configuration = ImageDownloader.Configuration()
        configuration.postsNotifications = false
        let downloader = ImageDownloader(configuration: configuration)
        let stream = downloader.downloadEvents
        let notified = Locked<[Notification.Name]>([])
        let names: [Notification.Name] = [
            .imageDownloadStart, .imageDownloadReceiveResponse, .imageDownloadReceiveInfo, .imageDownloadStop,
            .imageDownloadFinish,
        ]
        let observers = names.map { name in
            NotificationCenter.default.addObserver(forName: name, object: downloader, queue: nil) { note in
                notified.withLock { $0.append(note.name) }
            }
        }
        // The session the downloader made for itself posts no task notifications either.
        let url = origin.url("/quiet.png")
        let taskObserver = NotificationCenter.default.addObserver(
            forName: HTTPSessionTask.didCompleteNotification,
            object: nil,
            queue: nil
        ) { note in
            guard (note.object as? HTTPSessionTask)?.originalRequest.url == url else { return }
            notified.withLock { $0.append(note.name) }
        }
        defer {
            for observer in observers + [taskObserver] { NotificationCenter.default.removeObserver(observer) }
        }
        _ = try await downloader.image(with: url)
        var seen = 0
        for await event in stream {
            seen += 1
            if case .finished = event { break }
        }
        #expect(seen == 5)
        #expect(notified.value.isEmpty)
        await origin.stop()
    }
}
