/// Waits until `condition` holds, checking every 5 ms, for at most `timeout`.
/// - Returns: whether it held before the timeout.
@discardableResult
public func waitUntil(_ condition: () -> Bool, timeout: Duration = .seconds(10)) async -> Bool {
    let clock = ContinuousClock()
    let end = clock.now + timeout
    while !condition() {
        guard clock.now < end else { return false }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return true
}
