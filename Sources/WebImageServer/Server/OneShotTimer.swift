import Dispatch

extension DispatchSource {
    /// A timer on a global queue that runs `handler` once, `delay` from now (at once for a delay
    /// of zero or less), then cancels itself; cancel it sooner to drop it and its handler. Unlike
    /// a sleeping task, it fires on time however busy Swift's cooperative pool is.
    static func oneShot(after delay: Duration, handler: @escaping @Sendable () -> Void) -> any DispatchSourceTimer {
        let (seconds, attoseconds) = delay.components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        let nanoseconds =
            overflow ? Int64.max : scaled.addingReportingOverflow(attoseconds / 1_000_000_000).partialValue
        let timer = makeTimerSource(queue: .global())
        timer.schedule(deadline: .now() + .nanoseconds(Int(clamping: max(0, nanoseconds))))
        timer.setEventHandler {
            handler()
            timer.cancel()  // once; cancelling also releases this handler, and with it the timer
        }
        timer.activate()
        return timer
    }
}
