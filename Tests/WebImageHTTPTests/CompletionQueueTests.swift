import Dispatch
import Foundation
import Testing
import WebImageHTTP
import WebImageOrigin
import WebImageTestSupport

/// AFURLSessionManager's `completionQueue` and `completionGroup`: completion handlers of data and
/// download tasks run on the queue, inside the group; the session's async methods do not wait
/// for the queue.
@Suite("HTTPSession completion queue and group", .timeLimit(.minutes(1)))
struct CompletionQueueTests {
    @Test("Handlers run on the completion queue, in the group; async methods answer while the queue is held")
    func queueAndGroup() async throws {
        let queue = DispatchQueue(label: "test.completions")
        let marker = DispatchSpecificKey<String>()
        queue.setSpecific(key: marker, value: "completions")
        let group = DispatchGroup()
        var configuration = HTTPSession.Configuration()
        configuration.completionQueue = queue
        configuration.completionGroup = group
        let context = try await HTTPTestContext.make(configuration: configuration)
        context.origin.setRoute("/x", .data(Data("x".utf8), contentType: "text/plain"))
        let folder = try TemporaryDirectory()
        defer { folder.remove() }

        // Held: no handler can run until the queue resumes, yet the async API answers.
        queue.suspend()
        let ranOn = Locked<[String?]>([])
        let record: @Sendable () -> Void = { ranOn.withLock { $0.append(DispatchQueue.getSpecific(key: marker)) } }
        var tasks: [HTTPSessionTask] = []
        for _ in 0..<3 {
            tasks.append(
                context.session.dataTask(with: .init(url: context.origin.url("/x"))) { data, _, error in
                    #expect(error == nil && data == Data("x".utf8))
                    record()
                }
            )
        }
        let file = folder.file("x.txt")
        tasks.append(
            context.session.downloadTask(with: .init(url: context.origin.url("/x")), to: file) { url, _, error in
                #expect(error == nil && url == file)
                record()
            }
        )
        let streams = tasks.map(\.events)  // each ends after its task's completion handler was dispatched
        for task in tasks { task.resume() }
        let (data, response) = try await context.session.data(for: .init(url: context.origin.url("/x")))
        #expect(data == Data("x".utf8) && response.statusCode == 200, "data(for:) does not wait for the queue")
        // Every task has finished, so each handler is queued (in the group) behind the hold.
        for stream in streams { for await _ in stream {} }
        #expect(ranOn.value.isEmpty, "the handlers wait for the held queue")
        // Released: the group ends once every handler has run, each on the queue.
        queue.resume()
        let ended = await withCheckedContinuation { continuation in
            group.notify(queue: .global()) { continuation.resume(returning: ranOn.value) }
        }
        #expect(ended.count == 4)
        #expect(ended.allSatisfy { $0 == "completions" })
        await context.finish()
    }

    @Test("A group without a queue holds each handler while it runs, where the task finished")
    func groupAlone() async throws {
        let group = DispatchGroup()
        var configuration = HTTPSession.Configuration()
        configuration.completionGroup = group
        let context = try await HTTPTestContext.make(configuration: configuration)
        context.origin.setRoute("/y", .data(Data("y".utf8), contentType: "text/plain"))
        let groupBusyInHandler = Locked<Bool?>(nil)
        context.session.dataTask(with: .init(url: context.origin.url("/y"))) { _, _, _ in
            // Inside the handler the group is entered: a wait that does not block times out.
            groupBusyInHandler.withLock { $0 = group.wait(timeout: .now()) == .timedOut }
        }.resume()
        _ = await waitUntil { groupBusyInHandler.value != nil }
        #expect(groupBusyInHandler.value == true)
        await withCheckedContinuation { continuation in group.notify(queue: .global()) { continuation.resume() } }
        await context.finish()
    }
}

/// AFNetworking's task notifications and `taskDescriptionForSessionTasks`.
@Suite("HTTPSession task notifications and descriptions", .timeLimit(.minutes(1)))
struct TaskNotificationTests {
    /// What one notification said.
    struct Seen: Sendable {
        var name: Notification.Name
        var body: Data?
        var status: Int?
        var bytesReceived: Int64?
        var error: HTTPSessionError?
        var file: URL?
    }

    /// Every notification about `task`, in order.
    final class Observer {
        let seen = Locked<[Seen]>([])
        private var tokens: [any NSObjectProtocol] = []

        init(_ task: HTTPSessionTask) {
            let names = [
                HTTPSessionTask.didResumeNotification, HTTPSessionTask.didSuspendNotification,
                HTTPSessionTask.didCompleteNotification,
            ]
            for name in names {
                let token = NotificationCenter.default.addObserver(forName: name, object: task, queue: nil) {
                    [seen] note in
                    typealias Key = HTTPSessionTask.NotificationKey
                    let info = note.userInfo ?? [:]
                    let entry = Seen(
                        name: note.name,
                        body: info[Key.responseData] as? Data,
                        status: (info[Key.response] as? HTTPSession.Response)?.statusCode,
                        bytesReceived: (info[Key.metrics] as? HTTPTaskMetrics)?.bytesReceived,
                        error: info[Key.error] as? HTTPSessionError,
                        file: info[Key.downloadedFile] as? URL
                    )
                    seen.withLock { $0.append(entry) }
                }
                tokens.append(token)
            }
        }

        func stop() { for token in tokens { NotificationCenter.default.removeObserver(token) } }
    }

    @Test(
        "Resume, suspend and completion are posted with the body, response, metrics or error; descriptions label tasks"
    )
    func notifications() async throws {
        var configuration = HTTPSession.Configuration()
        configuration.taskDescription = "avatars"
        let context = try await HTTPTestContext.make(configuration: configuration)
        context.origin.setRoute("/n", .data(Data("body".utf8), contentType: "text/plain"))
        let task = context.session.dataTask(with: .init(url: context.origin.url("/n")))
        #expect(task.taskDescription == "avatars")
        task.taskDescription = "avatar 1"
        #expect(task.taskDescription == "avatar 1")
        let observer = Observer(task)
        defer { observer.stop() }
        let events = task.events
        task.resume()
        for await _ in events {}
        let seen = observer.seen.value
        #expect(seen.map(\.name) == [HTTPSessionTask.didResumeNotification, HTTPSessionTask.didCompleteNotification])
        let completion = seen.last
        #expect(completion?.body == Data("body".utf8))
        #expect(completion?.status == 200)
        #expect(completion?.bytesReceived == 4)
        #expect(completion?.error == nil)

        // A failure carries its error; a suspended and resumed task posts both.
        let missing = context.session.downloadTask(
            with: .init(url: context.origin.url("/missing")),
            to: FileManager.default.temporaryDirectory.appendingPathComponent("never-\(UUID().uuidString)")
        )
        let failedObserver = Observer(missing)
        defer { failedObserver.stop() }
        let failedEvents = missing.events
        missing.resume()
        missing.suspend()
        missing.resume()
        for await _ in failedEvents {}
        let failed = failedObserver.seen.value
        #expect(failed.first?.name == HTTPSessionTask.didResumeNotification)
        #expect(failed.last?.name == HTTPSessionTask.didCompleteNotification)
        #expect(failed.filter { $0.name == HTTPSessionTask.didCompleteNotification }.count == 1)
        #expect(failed.last?.error?.code == .unacceptableStatusCode)
        #expect(failed.last?.status == 404 && failed.last?.file == nil)
        await context.finish()
    }

    @Test("A session with postsTaskNotifications off posts none; its tasks complete as before")
    func notificationsOff() async throws {
        var configuration = HTTPSession.Configuration()
        configuration.postsTaskNotifications = false
        let group = DispatchGroup()
        configuration.completionGroup = group
        let context = try await HTTPTestContext.make(configuration: configuration)
        context.origin.setRoute("/quiet", .data(Data("quiet".utf8), contentType: "text/plain"))
        let received = Locked<Data?>(nil)
        let task = context.session.dataTask(with: .init(url: context.origin.url("/quiet"))) { data, _, _ in
            received.withLock { $0 = data }
        }
        let observer = Observer(task)
        defer { observer.stop() }
        let events = task.events
        task.resume()
        task.suspend()
        task.resume()
        for await _ in events {}
        await withCheckedContinuation { continuation in group.notify(queue: .global()) { continuation.resume() } }
        #expect(received.value == Data("quiet".utf8))
        #expect(observer.seen.value.isEmpty)
        await context.finish()
    }
}
