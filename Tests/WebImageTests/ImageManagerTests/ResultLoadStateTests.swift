import Foundation
import Testing

@testable import WebImage

/// ResultLoad's lifecycle machine on its own: no cache, loader or socket.
@Suite("ResultLoad's state machine")
struct LoadTaskStateTests {
    private func operation() -> ImageLoadOperation {
        ImageLoadOperation(url: nil, callbackQueue: nil, sink: { _ in }, onFinish: { _ in })
    }

    @Test("The last subscriber leaving a running task abandons it, once; nobody joins after")
    func abandonment() {
        var state = ResultLoad.State()
        let first = state.subscribe(operation())
        let second = state.subscribe(operation())
        #expect(first == 1 && second == 2)
        #expect(state.unsubscribe(1) == nil, "another subscriber still wants it")
        #expect(state.unsubscribe(1) == nil, "leaving twice changes nothing")
        #expect(state.unsubscribe(2) != nil, "the last one abandons the task")
        #expect(state.phase == .closed(abandoned: true))
        #expect(state.subscribe(operation()) == nil)
        #expect(state.takeFinalBatch() == nil, "an abandoned task delivers nothing")
    }

    @Test("The task runs at the highest priority a subscriber still asks for")
    func priority() {
        var state = ResultLoad.State()
        #expect(state.priority == .normal)
        let low = state.subscribe(operation(), priority: .low)
        #expect(state.priority == .low)
        let high = state.subscribe(operation(), priority: .veryHigh)
        #expect(state.priority == .veryHigh)
        _ = state.unsubscribe(high!)
        #expect(state.priority == .low, "the one who asked for more left")
        #expect(low != nil)
    }

    @Test("The final event goes to every subscriber; a caller arriving while it goes out starts a new task")
    func delivery() {
        var state = ResultLoad.State()
        let early = [operation(), operation()]
        for operation in early { _ = state.subscribe(operation) }
        let firstBatch = state.takeFinalBatch()
        #expect(firstBatch?.map(ObjectIdentifier.init) == early.map(ObjectIdentifier.init), "in arrival order")
        #expect(state.phase == .delivering)
        #expect(state.subscribe(operation()) == nil, "its result was in before this caller asked")
        #expect(state.unsubscribe(99) == nil)
        #expect(state.takeFinalBatch() == nil)
        #expect(state.phase == .closed(abandoned: false))
        #expect(state.subscribe(operation()) == nil, "closed: a later caller starts a new task")
    }

    @Test("A subscriber leaving after the final event went out to it changes nothing")
    func leavingAfterDelivery() {
        var state = ResultLoad.State()
        let first = state.subscribe(operation())
        _ = state.takeFinalBatch()
        #expect(state.unsubscribe(first!) == nil, "the result already went out")
        #expect(state.phase == .delivering)
        #expect(state.takeFinalBatch() == nil)
        #expect(state.phase == .closed(abandoned: false))
    }
}
