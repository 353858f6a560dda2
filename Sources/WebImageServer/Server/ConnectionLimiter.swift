import DequeModule
import NIOCore
import Synchronization

/// Counts a server's open client connections against ``ConnectionLimits/maxConnections`` and
/// knows which are idle, oldest first. At the cap a new connection takes the place of the
/// connection idle the longest, or is refused when none is idle. Thread-safe: the decision is made
/// under its lock and returned; closing a connection is left to the caller, outside the lock.
final class ConnectionLimiter: Sendable {
    /// What to do with a connection that just opened.
    enum Admission: Equatable {
        /// Counted; nothing else to do.
        case admitted(id: UInt64)
        /// Counted in place of `victim`, which the caller closes.
        case admittedEvicting(id: UInt64, victim: any Channel)
        /// Over the cap with nothing idle: the caller closes the new connection.
        case refused

        static func == (lhs: Admission, rhs: Admission) -> Bool {
            switch (lhs, rhs) {
            case (.admitted(let left), .admitted(let right)): left == right
            case (.admittedEvicting(let left, let leftVictim), .admittedEvicting(let right, let rightVictim)):
                left == right && leftVictim === rightVictim
            case (.refused, .refused): true
            default: false
            }
        }
    }

    private struct Member {
        let channel: any Channel
        /// When it last became idle (a turn number), `nil` while it works on a request.
        var idleTurn: UInt64?
    }

    private struct State {
        var nextID: UInt64 = 0
        var nextTurn: UInt64 = 0
        var members: [UInt64: Member] = [:]
        /// Idle members by the turn they became idle; an entry whose turn no longer matches its
        /// member's is stale and skipped (removal from the middle would cost O(n)).
        var idleOrder: Deque<(id: UInt64, turn: UInt64)> = []

        mutating func markIdle(_ id: UInt64) {
            guard members[id] != nil else { return }
            nextTurn += 1
            members[id]?.idleTurn = nextTurn
            idleOrder.append((id, nextTurn))
            if idleOrder.count > 2 * members.count + 64 { compact() }
        }

        mutating func popLongestIdle() -> (id: UInt64, channel: any Channel)? {
            while let first = idleOrder.popFirst() {
                if let member = members[first.id], member.idleTurn == first.turn {
                    members[first.id] = nil
                    return (first.id, member.channel)
                }
            }
            return nil
        }

        private mutating func compact() {
            let live = members.compactMap { id, member in member.idleTurn.map { (id: id, turn: $0) } }
            idleOrder = Deque(live.sorted { $0.turn < $1.turn })
        }
    }

    let maxConnections: Int
    private let state = Mutex(State())

    init(maxConnections: Int) {
        self.maxConnections = max(1, maxConnections)
    }

    /// Connections counted now.
    var openCount: Int { state.withLock { $0.members.count } }

    /// Counts `channel`, idle until its first request head.
    func opened(_ channel: any Channel) -> Admission {
        state.withLock { state in
            var victim: (any Channel)?
            if state.members.count >= maxConnections {
                guard let longestIdle = state.popLongestIdle() else { return .refused }
                victim = longestIdle.channel
            }
            state.nextID += 1
            let id = state.nextID
            state.members[id] = Member(channel: channel, idleTurn: nil)
            state.markIdle(id)
            return victim.map { .admittedEvicting(id: id, victim: $0) } ?? .admitted(id: id)
        }
    }

    /// A request head arrived: not idle until its response ends.
    func becameBusy(_ id: UInt64) {
        state.withLock { $0.members[id]?.idleTurn = nil }
    }

    /// Its last response ended: idle again, newest of the idle.
    func becameIdle(_ id: UInt64) {
        state.withLock { $0.markIdle(id) }
    }

    /// The connection closed (a no-op for one already evicted).
    func closed(_ id: UInt64) {
        state.withLock { _ = $0.members.removeValue(forKey: id) }
    }
}
