import Foundation
import Testing
import WebImage
import WebImageOrigin
import WebImageTestSupport

@Suite("Decode queue", .timeLimit(.minutes(1)))
struct ImageWorkQueueTests {
    @Test("Work starts by priority, then in arrival order; waiting work can be cancelled")
    func order() async {
        let queue = ImageWorkQueue(width: 1)
        let started = Locked<[String]>([])
        let release = DispatchSemaphore(value: 0)
        queue.enqueue { release.wait() }  // holds the only place
        await DownloaderFixtures.wait { queue.runningCount == 1 }
        for (name, priority) in [("low", ImageWorkQueue.Priority.low), ("normal 1", .normal), ("high", .high)] {
            queue.enqueue(priority: priority) { started.withLock { $0.append(name) } }
        }
        let dropped = queue.enqueue(priority: .high) { started.withLock { $0.append("cancelled") } }
        queue.enqueue { started.withLock { $0.append("normal 2") } }
        #expect(dropped.cancel())
        #expect(queue.waitingCount == 4)
        release.signal()
        await DownloaderFixtures.wait { started.value.count == 4 }
        #expect(started.value == ["high", "normal 1", "normal 2", "low"])
        #expect(!dropped.cancel(), "gone from the queue")
        await DownloaderFixtures.wait { queue.runningCount == 0 }
        #expect(queue.peakRunningCount == 1)
    }

    @Test("Its threads carry its name (the first 15 bytes on Linux), as top -H and ps -T show them")
    func threadNames() async throws {
        let names = Locked<[String]>([])
        for name in ["probe", "a-longer-queue-name"] {
            let queue = ImageWorkQueue(width: 1, name: name)
            queue.enqueue {
                #if os(Linux)
                let comm = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
                names.withLock { $0.append(comm.trimmingCharacters(in: .newlines)) }
                #else
                names.withLock { $0.append(Thread.current.name ?? "") }
                #endif
            }
        }
        await DownloaderFixtures.wait { names.value.count == 2 }
        #if os(Linux)
        #expect(Set(names.value) == ["webimage.probe", "webimage.a-long"])
        #else
        #expect(Set(names.value) == ["webimage.probe", "webimage.a-longer-queue-name"])
        #endif
    }

    @Test("Stress: the width holds however much work arrives")
    func stress() async {
        let queue = ImageWorkQueue(width: 3)
        let running = Locked(0)
        let peak = Locked(0)
        let done = Locked(0)
        for _ in 0..<300 {
            queue.enqueue {
                let now = running.withLock {
                    $0 += 1
                    return $0
                }
                peak.withLock { $0 = max($0, now) }
                usleep(200)
                running.withLock { $0 -= 1 }
                done.withLock { $0 += 1 }
            }
        }
        await DownloaderFixtures.wait { done.value == 300 }
        #expect(done.value == 300)
        #expect(peak.value <= 3)
        #expect(queue.peakRunningCount == 3)
        #expect(queue.runningCount == 0 && queue.waitingCount == 0)
    }

    @Test("Work blocking every place never stalls Swift tasks: the queue runs on threads of its own")
    func ownThreads() async {
        // On Linux the cooperative pool and DispatchQueue.global() share as many threads as
        // cores: work blocking that many places there would leave no thread for any task. The
        // test itself only suspends (it blocks no thread of the pool other suites share).
        let width = ProcessInfo.processInfo.activeProcessorCount + 1
        let queue = ImageWorkQueue(width: width)
        let release = DispatchSemaphore(value: 0)
        let blocked = Locked(0)
        for _ in 0..<width {
            queue.enqueue {
                blocked.withLock { $0 += 1 }
                release.wait()
            }
        }
        defer { for _ in 0..<width { release.signal() } }
        #expect(await waitUntil({ blocked.value == width }, timeout: .seconds(30)))
        let taskRan = Locked(false)
        Task.detached { taskRan.withLock { $0 = true } }
        #expect(await waitUntil({ taskRan.value }, timeout: .seconds(30)), "a task ran while every place was blocked")
        #expect(queue.threadCount == width)
    }

    @Test("Threads end after idleTimeout without work and come back with the next work")
    func idleThreadsEnd() async {
        let queue = ImageWorkQueue(width: 2, idleTimeout: .milliseconds(50))
        #expect(queue.threadCount == 0, "an unused queue holds no thread")
        let done = Locked(0)
        for _ in 0..<4 { queue.enqueue { done.withLock { $0 += 1 } } }
        await DownloaderFixtures.wait { done.value == 4 }
        #expect(queue.threadCount <= 2)
        await DownloaderFixtures.wait { queue.threadCount == 0 }
        #expect(queue.threadCount == 0)
        queue.enqueue { done.withLock { $0 += 1 } }
        await DownloaderFixtures.wait { done.value == 5 }
        #expect(done.value == 5)
    }

    @Test("Downloads decode on the context's queue: twelve loads, one decode at a time")
    func downloadsHonourTheWidth() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        for index in 0..<12 {
            origin.setRoute(
                "/\(index).png",
                .data(DecodingMemoryBudgetTests.png(seed: UInt64(index)), contentType: "image/png")
            )
        }
        var context = ImageContext()
        context.decodeQueue = ImageWorkQueue(width: 1)
        let widths = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<12 {
                group.addTask { [context] in
                    try await fixture.manager.loadImage(with: origin.url("/\(index).png"), context: context).image?
                        .width ?? 0
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(widths == Array(repeating: 256, count: 12))
        #expect(context.decodeQueue?.peakRunningCount == 1)
        await origin.stop()
    }

    @Test("A load cancelled while its decode is queued never decodes: nothing is reserved")
    func cancelledWhileQueued() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        origin.setRoute("/q.png", .data(DecodingMemoryBudgetTests.png(seed: 3), contentType: "image/png"))
        let queue = ImageWorkQueue(width: 1)
        let budget = DecodingMemoryBudget(limit: 1 << 30)
        var context = ImageContext()
        context.decodeQueue = queue
        context.decodingMemoryBudget = budget
        let release = DispatchSemaphore(value: 0)
        queue.enqueue { release.wait() }  // holds the only place
        let outcome = Locked<[String]>([])
        let load = fixture.manager.loadImage(with: origin.url("/q.png"), context: context) {
            _,
            _,
            error,
            _,
            finished,
            _ in
            if finished { outcome.withLock { $0.append(error?.code.rawValue ?? "ok") } }
        }
        await DownloaderFixtures.wait { queue.waitingCount == 1 }
        load.cancel()
        release.signal()
        await DownloaderFixtures.wait { queue.runningCount == 0 && queue.waitingCount == 0 }
        #expect(outcome.value == ["cancelled"])
        #expect(budget.peakBytesInUse == 0, "the cancelled load's decode did not run")
        await origin.stop()
    }
}
