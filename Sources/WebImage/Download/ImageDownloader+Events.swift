import Foundation
import WebImageHTTP

/// A network load's lifecycle (SDWebImageDownloadStart/ReceiveResponse/Stop/FinishNotification).
public enum ImageDownloaderEvent: Sendable {
    /// A network load started.
    case started(URL)
    /// Its response head arrived.
    case receivedResponse(URL, HTTPSession.Response)
    /// The network load ended: finished, failed or cancelled.
    case stopped(URL)
    /// The network load finished with data (before decoding).
    case finished(URL)
    /// The first bytes told the image's format, size and frame count, before the body ended.
    case receivedImageInfo(URL, ImageHeader)

    public var url: URL {
        switch self {
        case .started(let url), .receivedResponse(let url, _), .stopped(let url), .finished(let url),
            .receivedImageInfo(let url, _):
            url
        }
    }

    /// The notification posted for this event.
    public var notificationName: Notification.Name {
        switch self {
        case .started: .imageDownloadStart
        case .receivedResponse: .imageDownloadReceiveResponse
        case .stopped: .imageDownloadStop
        case .finished: .imageDownloadFinish
        case .receivedImageInfo: .imageDownloadReceiveInfo
        }
    }
}

extension Notification.Name {
    /// Posted by an ``ImageDownloader`` (the object) when a network load starts; `userInfo["url"]`.
    public static let imageDownloadStart = Notification.Name("WebImageDownloadStartNotification")
    /// Posted when a response head arrives; `userInfo["url"]`, `userInfo["statusCode"]`.
    public static let imageDownloadReceiveResponse = Notification.Name("WebImageDownloadReceiveResponseNotification")
    /// Posted when a network load ends, however it ends; `userInfo["url"]`.
    public static let imageDownloadStop = Notification.Name("WebImageDownloadStopNotification")
    /// Posted when the first bytes tell an image's format and size; `userInfo["url"]`,
    /// `userInfo["info"]` (an `ImageHeader`).
    public static let imageDownloadReceiveInfo = Notification.Name("WebImageDownloadReceiveInfoNotification")
    /// Posted when a network load finishes with data; `userInfo["url"]`.
    public static let imageDownloadFinish = Notification.Name("WebImageDownloadFinishNotification")
}

extension ImageDownloader {
    /// Each network load's events from now on, in order per load.
    public var downloadEvents: AsyncStream<ImageDownloaderEvent> { eventHub.subscribe() }

    /// Posts `event` as a notification (unless the configuration turned them off) and to the
    /// event streams.
    func publish(_ event: ImageDownloaderEvent) {
        defer { eventHub.send(event) }
        guard configuration.postsNotifications else { return }
        var userInfo: [AnyHashable: Any] = ["url": event.url]
        if case .receivedResponse(_, let response) = event { userInfo["statusCode"] = response.statusCode }
        if case .receivedImageInfo(_, let header) = event { userInfo["info"] = header }
        NotificationCenter.default.post(name: event.notificationName, object: self, userInfo: userInfo)
    }
}
