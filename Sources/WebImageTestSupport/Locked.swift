@_spi(WebImageInternals) import WebImageCoders

/// A value behind a mutex, for test bookkeeping shared across tasks.
public final class Locked<Value: Sendable>: Sendable {
    private let mutex: Protected<Value>

    public init(_ value: Value) { mutex = Protected(value) }

    public func withLock<Result: Sendable>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try mutex.withLock { try body(&$0) }
    }

    /// A copy of the current value.
    public var value: Value { mutex.withLock { $0 } }
}
