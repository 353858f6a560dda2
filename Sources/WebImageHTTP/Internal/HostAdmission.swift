import Foundation
@_spi(WebImageInternals) import WebImageCoders

/// At most `limit` tasks in flight per host (scheme, host and port); the others wait, the
/// highest ``HTTPSessionTask/priority`` first and, at equal priority, the first started.
///
/// URLSession's `httpMaximumConnectionsPerHost` and task priorities, in one place: the gate a
/// task passes before its first request and leaves when it ends (redirects included), so the
/// order of the waiting tasks is ours, not the order AsyncHTTPClient's pool happens to keep.
/// Thread-safe; no continuation is resumed while the lock is held.
final class HostAdmission: Sendable {
    private struct Waiter {
        let taskIdentifier: Int
        var priority: Float
        /// ``HTTPSessionTask/startOrder``: `resume()` calls, not the order their Swift tasks reach
        /// the gate.
        let startOrder: UInt64
        let continuation: HandOffContinuation<Bool, Never>

        /// Whether this waiter goes before `other`.
        func precedes(_ other: Waiter) -> Bool {
            priority != other.priority ? priority > other.priority : startOrder < other.startOrder
        }
    }

    private struct Host {
        var running = 0
        var waiters: [Waiter] = []

        var isIdle: Bool { running == 0 && waiters.isEmpty }

        /// Takes a place when one is free and nobody waits for it.
        mutating func admit(limit: Int) -> Bool {
            guard running < limit, waiters.isEmpty else { return false }
            running += 1
            return true
        }

        /// A task left: its place goes to the waiter that goes first (returned), else is freed.
        mutating func leave() -> Waiter? {
            guard let first = waiters.indices.min(by: { waiters[$0].precedes(waiters[$1]) }) else {
                running -= 1
                return nil
            }
            return waiters.remove(at: first)
        }
    }

    private struct State {
        var hosts: [String: Host] = [:]
    }

    let limit: Int
    private let state = Protected(State())

    init(limit: Int) { self.limit = max(1, limit) }

    /// The key tasks to one origin share: `https://example.com:443`.
    static func key(for url: URL) -> String {
        guard let parts = URLTextParts(url.absoluteString) else { return "http://:80" }
        let secure = parts.isHTTPS
        let port = parts.portNumber ?? (secure ? 443 : 80)
        return "\(secure ? "https" : "http")://\(parts.host.lowercased()):\(port)"
    }

    /// Waits for a place for the task at `host`; `false` when the calling Swift task was
    /// cancelled first (no place is then held). Pair every `true` with one ``leave(_:)``.
    /// `priority` is read under the gate's lock, so a change made while the task is being
    /// queued is seen either here or by ``reprioritize(_:taskIdentifier:priority:)``.
    /// `startOrder` orders waiters of equal priority (lowest first).
    func enter(_ host: String, taskIdentifier: Int, startOrder: UInt64, priority: () -> Float) async -> Bool {
        // Mutated in place (one lookup, no copy of the waiters): a host is only added here when
        // it had no entry, and then its place is free.
        let admitted = state.withLock { $0.hosts[host, default: Host()].admit(limit: limit) }
        if admitted { return true }
        return await withTaskCancellationHandler {
            await withHandOffContinuation { (continuation: HandOffContinuation<Bool, Never>) in
                // Checked under the lock the cancel handler also takes: either the handler ran
                // first (Task.isCancelled is true here) or it finds this waiter and resumes it.
                let immediate = state.withLock { state -> Bool? in
                    if Task.isCancelled { return false }
                    if state.hosts[host, default: Host()].admit(limit: limit) { return true }
                    state.hosts[host, default: Host()].waiters.append(
                        Waiter(
                            taskIdentifier: taskIdentifier,
                            priority: priority(),
                            startOrder: startOrder,
                            continuation: continuation
                        )
                    )
                    return nil
                }
                if let immediate { continuation.resume(returning: immediate) }
            }
        } onCancel: {
            let removed = state.withLock { state -> Waiter? in
                guard let index = state.hosts[host]?.waiters.firstIndex(where: { $0.taskIdentifier == taskIdentifier })
                else { return nil }
                return state.hosts[host]?.waiters.remove(at: index)
            }
            removed?.continuation.resume(returning: false)
        }
    }

    /// Gives the task's place at `host` to the waiter that goes first, if any.
    func leave(_ host: String) {
        let next = state.withLock { state -> Waiter? in
            guard let index = state.hosts.index(forKey: host) else { return nil }
            let next = state.hosts.values[index].leave()  // in place: no copy of the waiters
            if state.hosts.values[index].isIdle { state.hosts.remove(at: index) }
            return next
        }
        next?.continuation.resume(returning: true)
    }

    /// A waiting task's new priority; no effect once it runs.
    func reprioritize(_ host: String, taskIdentifier: Int, priority: Float) {
        state.withLock { state in
            guard let index = state.hosts[host]?.waiters.firstIndex(where: { $0.taskIdentifier == taskIdentifier })
            else { return }
            state.hosts[host]?.waiters[index].priority = priority
        }
    }

    /// Tasks waiting for `host` (for tests).
    func waitingCount(_ host: String) -> Int { state.withLock { $0.hosts[host]?.waiters.count ?? 0 } }
}
