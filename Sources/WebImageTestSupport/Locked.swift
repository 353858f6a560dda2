import Synchronization

/// A value behind a mutex, for test bookkeeping shared across tasks.
public final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    public init(_ value: Value) { mutex = Mutex(value) }

    public func withLock<Result: Sendable>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try mutex.withLock { try body(&$0) }
    }

    /// A copy of the current value.
    public var value: Value { mutex.withLock { $0 } }
}
