import AsyncHTTPClient
import Foundation
import NIOCore
import Synchronization
@_spi(WebImageInternals) import WebImageCoders

/// The session's read timeout (``HTTPSession/Configuration/readTimeout``): ends a task whose
/// request receives nothing for that long, from the request's start to the end of its body; a
/// suspended task is not ended (its idle time starts again).
///
/// One repeating timer a session looks over the watched tasks, an eighth of the timeout apart
/// (5 ms to 1 s), and runs only while some are watched. AsyncHTTPClient's own read timeout
/// instead cancels and schedules a timer on every read of every response: about 4 % of the
/// instructions of a small download. Receiving (and sending a body) is one clock read and one
/// atomic store. Thread-safe; no watch is stopped while the lock is held.
final class ReadTimeoutWatchdog: Sendable {
    /// One task's network activity: `touch()` on every sign of life; `stop` is asked to end
    /// the task when it is idle for the timeout.
    final class Watch: Sendable {
        /// The last activity on the uptime clock, in nanoseconds.
        fileprivate let lastActivity = Atomic<Int64>(ReadTimeoutWatchdog.now())
        fileprivate let hasExpired = Atomic<Bool>(false)
        fileprivate let stop: @Sendable () -> Bool

        fileprivate init(stop: @escaping @Sendable () -> Bool) {
            self.stop = stop
        }

        /// Something was received or sent: the idle time starts again.
        func touch() { lastActivity.store(ReadTimeoutWatchdog.now(), ordering: .relaxed) }
    }

    private struct State {
        var watches: [ObjectIdentifier: Watch] = [:]
        var timerRunning = false
    }

    private let timeoutNanoseconds: Int64
    private let period: TimeAmount
    private let state = Protected(State())
    private let eventLoopGroup: any EventLoopGroup

    init(timeout: Duration, eventLoopGroup: any EventLoopGroup) {
        self.eventLoopGroup = eventLoopGroup
        let nanoseconds = timeout.clampedForDeadline.timeAmount.nanoseconds
        timeoutNanoseconds = nanoseconds
        period = .nanoseconds(min(max(nanoseconds / 8, 5_000_000), 1_000_000_000))
    }

    /// Watches a task from now until `end(_:)`. When it has been idle for the timeout, `stop`
    /// runs on an event loop (it must not block): it ends the task and returns `true`, or returns
    /// `false` when the task may not be ended now (suspended), and the idle time starts again.
    func watch(stop: @escaping @Sendable () -> Bool) -> Watch {
        let watch = Watch(stop: stop)
        let startsTimer = state.withLock { state in
            state.watches[ObjectIdentifier(watch)] = watch
            defer { state.timerRunning = true }
            return !state.timerRunning
        }
        if startsTimer {
            eventLoopGroup.next().scheduleRepeatedTask(initialDelay: period, delay: period) {
                [self] timer in
                scan(timer)
            }
        }
        return watch
    }

    /// Stops watching: the task's requests are over.
    func end(_ watch: Watch) {
        state.withLock { _ = $0.watches.removeValue(forKey: ObjectIdentifier(watch)) }
    }

    /// Stops the tasks idle for the timeout (each once; they stay watched until their `end`);
    /// stops the timer when nothing is left to watch (a later `watch` starts another).
    private func scan(_ timer: RepeatedTask) {
        let now = Self.now()
        let (idle, stopsTimer) = state.withLock { state -> ([Watch], Bool) in
            let idle = state.watches.values.filter {
                !$0.hasExpired.load(ordering: .relaxed)
                    && now - $0.lastActivity.load(ordering: .relaxed) >= timeoutNanoseconds
            }
            let stopsTimer = state.watches.isEmpty
            if stopsTimer { state.timerRunning = false }
            return (idle, stopsTimer)
        }
        if stopsTimer { timer.cancel() }
        for watch in idle {
            if watch.stop() {
                watch.hasExpired.store(true, ordering: .relaxed)
            } else {
                watch.touch()
            }
        }
    }

    /// The monotonic clock NIO's deadlines use, in nanoseconds.
    fileprivate static func now() -> Int64 { Int64(truncatingIfNeeded: NIODeadline.now().uptimeNanoseconds) }
}
