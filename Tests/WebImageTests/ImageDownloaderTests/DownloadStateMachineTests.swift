import Testing

@testable import WebImage

/// DownloadOperation's lifecycle machine on its own: callers are numbers, handlers are names,
/// the work counts its stops. No downloader, session or socket.
@Suite("DownloadOperation's state machine")
struct DownloadStateMachineTests {
    final class CountingWork: DownloadWork {
        var stops = 0
        var note = ""
        func stop() { stops += 1 }
    }

    typealias Machine = DownloadStateMachine<Int, String, Work>

    struct Work: DownloadWork {
        var counter: CountingWork
        func stop() { counter.stop() }
    }

    @Test("Callers join until it finishes; the last caller leaving a running load stops its work once")
    func abandonment() {
        let counter = CountingWork()
        var machine = Machine(options: [])
        #expect(machine.join(1, options: [], handler: "a") == true)
        #expect(machine.join(2, options: [], handler: "b") == true)
        #expect(machine.start() == [])
        #expect(machine.attach({ _ in }, initial: Work(counter: counter)) == true)
        guard case .cancelCaller("a") = machine.leave(1) else {
            Issue.record("the first caller to leave only gets cancelled")
            return
        }
        guard case .none = machine.leave(1) else {
            Issue.record("leaving twice changes nothing")
            return
        }
        guard case .cancelCallerAndStop("b", let work?) = machine.leave(2) else {
            Issue.record("the last caller stops the work")
            return
        }
        work.stop()
        #expect(counter.stops == 1)
        #expect(machine.phase == .finished)
        #expect(machine.join(3, options: [], handler: "c") == false, "nobody joins a finished load")
        #expect(machine.beginDelivery() == nil, "an abandoned load delivers nothing")
        #expect(machine.takeFinalBatch() == nil)
    }

    @Test("Every caller leaving before the start: nothing is sent")
    func leftBeforeStart() {
        var machine = Machine(options: [])
        #expect(machine.join(1, options: [], handler: "a") == true)
        guard case .cancelCallerAndStop("a", nil) = machine.leave(1) else {
            Issue.record("no work to stop yet")
            return
        }
        #expect(machine.start() == nil)
        #expect(
            machine.attach({ _ in }, initial: Work(counter: CountingWork())) == false,
            "work started late is refused"
        )
    }

    @Test("The final completion reaches every caller once; a caller arriving while it goes out starts anew")
    func delivery() {
        let counter = CountingWork()
        var machine = Machine(options: [])
        for (caller, name) in [(1, "a"), (2, "b"), (3, "c")] {
            #expect(machine.join(caller, options: [], handler: name) == true)
        }
        _ = machine.start()
        _ = machine.attach({ $0.counter.note = "task" }, initial: Work(counter: counter))
        #expect(machine.runningWork?.counter.note == "task")
        #expect(machine.waitingHandlers == ["a", "b", "c"], "previews and progress go to waiting callers in order")
        #expect(machine.beginDelivery() != nil)
        #expect(machine.runningWork == nil && machine.waitingHandlers.isEmpty, "no previews once the result goes out")
        #expect(machine.takeFinalBatch()?.map(\.handler) == ["a", "b", "c"])
        #expect(
            machine.join(4, options: [], handler: "late") == false,
            "a result that was in before the caller asked is not its answer"
        )
        #expect(machine.join(5, options: .fromLoaderOnly, handler: "fresh") == false)
        guard case .none = machine.leave(1) else {
            Issue.record("a caller whose completion went out has nothing to cancel")
            return
        }
        #expect(machine.takeFinalBatch() == nil)
        #expect(machine.phase == .finished)
        #expect(counter.stops == 0, "a delivered load's work is not cancelled")
    }

    @Test("Callers wanting the network's answer join a waiting or running load")
    func freshAnswerJoinsBeforeResult() {
        var machine = Machine(options: [])
        #expect(machine.join(1, options: [], handler: "a") == true)
        #expect(machine.join(2, options: .fromLoaderOnly, handler: "waiting") == true)
        _ = machine.start()
        #expect(machine.join(3, options: .refreshCached, handler: "running") == true)
        _ = machine.beginDelivery()
        #expect(machine.takeFinalBatch()?.map(\.handler) == ["a", "waiting", "running"])
    }

    @Test("A caller leaving before the result goes out is cancelled; the others still get it")
    func leaveBeforeDelivery() {
        var machine = Machine(options: [])
        _ = machine.join(1, options: [], handler: "a")
        _ = machine.join(2, options: [], handler: "b")
        _ = machine.start()
        guard case .cancelCaller("a") = machine.leave(1) else {
            Issue.record("leaving a load others want cancels only that caller")
            return
        }
        _ = machine.beginDelivery()
        #expect(machine.takeFinalBatch()?.map(\.handler) == ["b"])
        #expect(machine.takeFinalBatch() == nil)
    }

    @Test("Priority: any high-priority caller raises the load; low only while every caller is low")
    func priority() {
        var machine = Machine(options: .lowPriority)
        #expect(machine.options.contains(.lowPriority))
        _ = machine.join(1, options: .lowPriority, handler: "a")
        #expect(machine.options.contains(.lowPriority))
        _ = machine.join(2, options: [], handler: "b")
        #expect(!machine.options.contains(.lowPriority))
        _ = machine.join(3, options: .highPriority, handler: "c")
        #expect(machine.start() == [.highPriority])
    }

    @Test("Cancelling all gives every waiting caller its handler back, in order, and stops the work")
    func cancelAll() {
        let counter = CountingWork()
        var machine = Machine(options: [])
        _ = machine.join(1, options: [], handler: "a")
        _ = machine.join(2, options: [], handler: "b")
        _ = machine.start()
        _ = machine.attach({ _ in }, initial: Work(counter: counter))
        let (handlers, work) = machine.cancelAll()
        #expect(handlers == ["a", "b"])
        work?.stop()
        #expect(counter.stops == 1)
        #expect(!machine.isWanted && machine.phase == .finished)
    }
}
