import Foundation
@_spi(WebImageInternals) import WebImageCoders

/// Fans events out to any number of `AsyncStream` subscribers.
final class EventHub<Event: Sendable>: Sendable {
    private let continuations = Protected<[UUID: AsyncStream<Event>.Continuation]>([:])

    func subscribe() -> AsyncStream<Event> {
        let (stream, continuation) = AsyncStream.makeStream(of: Event.self)
        let id = UUID()
        continuations.withLock { $0[id] = continuation }
        continuation.onTermination = { [weak self] _ in _ = self?.continuations.withLock { $0.removeValue(forKey: id) }
        }
        return stream
    }

    func send(_ event: Event) {
        for continuation in continuations.withLock({ Array($0.values) }) { continuation.yield(event) }
    }
}
