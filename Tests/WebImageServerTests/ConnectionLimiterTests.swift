import NIOCore
import NIOEmbedded
import Testing

@testable import WebImageServer

/// The connection cap's decisions, with channels that never touch a socket: who is admitted,
/// who is evicted (the longest idle), and when a new connection is refused (none idle).
@Suite("ConnectionLimiter: decisions without sockets")
struct ConnectionLimiterTests {
    @Test("Under the cap every connection is admitted; at it the longest-idle one makes room")
    func evictsTheLongestIdle() throws {
        let limiter = ConnectionLimiter(maxConnections: 3)
        let channels = (0..<5).map { _ in EmbeddedChannel() }
        var ids: [UInt64] = []
        for channel in channels.prefix(3) {
            guard case .admitted(let id) = limiter.opened(channel) else {
                Issue.record("refused under the cap")
                return
            }
            ids.append(id)
        }
        #expect(limiter.openCount == 3)
        // The first works on a request: the second is now the longest idle.
        limiter.becameBusy(ids[0])
        let fourth = limiter.opened(channels[3])
        guard case .admittedEvicting(_, let victim) = fourth else {
            Issue.record("expected an eviction, got \(fourth)")
            return
        }
        #expect(victim === channels[1])
        #expect(limiter.openCount == 3)
        // The evicted one's close later is a no-op; the count stays right.
        limiter.closed(ids[1])
        #expect(limiter.openCount == 3)
        // The first goes idle again: it is now newer than the third.
        limiter.becameIdle(ids[0])
        guard case .admittedEvicting(_, let next) = limiter.opened(channels[4]) else {
            Issue.record("expected a second eviction")
            return
        }
        #expect(next === channels[2])
    }

    @Test("At the cap with every connection busy, a new one is refused; a close makes room")
    func refusesWhenAllBusy() {
        let limiter = ConnectionLimiter(maxConnections: 2)
        var ids: [UInt64] = []
        for _ in 0..<2 {
            if case .admitted(let id) = limiter.opened(EmbeddedChannel()) { ids.append(id) }
        }
        for id in ids { limiter.becameBusy(id) }
        #expect(limiter.opened(EmbeddedChannel()) == .refused)
        limiter.closed(ids[0])
        #expect(limiter.openCount == 1)
        guard case .admitted = limiter.opened(EmbeddedChannel()) else {
            Issue.record("a freed place was not given")
            return
        }
        #expect(limiter.openCount == 2)
    }

    @Test("Many idle/busy flips keep the idle order bounded and right")
    func compactsItsIdleOrder() {
        let limiter = ConnectionLimiter(maxConnections: 2)
        let first = EmbeddedChannel()
        let second = EmbeddedChannel()
        guard case .admitted(let a) = limiter.opened(first), case .admitted = limiter.opened(second) else {
            Issue.record("refused under the cap")
            return
        }
        for _ in 0..<10_000 {
            limiter.becameBusy(a)
            limiter.becameIdle(a)
        }
        // `second` has been idle the longest.
        guard case .admittedEvicting(_, let victim) = limiter.opened(EmbeddedChannel()) else {
            Issue.record("expected an eviction")
            return
        }
        #expect(victim === second)
    }
}
