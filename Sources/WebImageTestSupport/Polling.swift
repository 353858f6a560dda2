import Foundation
@_spi(WebImageInternals) import WebImageCoders

/// Waits until `condition` holds, checking every 5 ms, for at most `timeout`. The default bound
/// is generous (a minute): a test asserts that something happens, not how fast on a busy
/// machine, and a wait that ends early costs nothing.
/// - Returns: whether it held before the timeout.
@discardableResult
public func waitUntil(_ condition: () -> Bool, timeout: Duration = .seconds(60)) async -> Bool {
    let clock = ContinuousClock()
    let end = clock.now + timeout
    while !condition() {
        guard clock.now < end else { return false }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return true
}

/// Runs blocking `work` (a child process and the wait for it, a semaphore) on a thread of its
/// own and returns its result: the two threads of the cooperative pool stay free for the
/// in-process servers and timers every other test running beside it depends on.
public func onOwnThread<Value: Sendable>(_ work: @escaping @Sendable () throws -> Value) async throws -> Value {
    try await withThrowingHandOffContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}
