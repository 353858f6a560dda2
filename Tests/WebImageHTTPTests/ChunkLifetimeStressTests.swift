import Dispatch
import Foundation
import Testing
import WebImageHTTP
import WebImageOrigin
import WebImageTestSupport

/// Keeps each body chunk until the next one arrives, then lets it go on another thread after
/// checking it still holds the body's bytes at its offset: the pattern of a consumer that queues
/// chunks (progressive decoding, event streams) while the client reads on.
private final class ChunkKeepingDelegate: HTTPSessionTaskDelegate {
    let payload: Data
    let releases = DispatchQueue(label: "webimage.tests.chunk-releases")
    /// The chunk kept and its offset in the body; bytes received; chunks that differed from the body.
    let state = Locked<(kept: (Data, Int)?, received: Int, damaged: Int)>((nil, 0, 0))

    init(payload: Data) { self.payload = payload }

    func task(_ task: HTTPSessionTask, didReceive data: Data) {
        let previous = state.withLock { state -> (Data, Int)? in
            defer {
                state.kept = (data, state.received)
                state.received += data.count
            }
            return state.kept
        }
        guard let (chunk, offset) = previous else { return }
        releases.async { [payload, state] in
            let intact = chunk == payload[offset..<offset + chunk.count]
            if !intact { state.withLock { $0.damaged += 1 } }
        }
    }
}

@Suite("Stress: body chunks a delegate keeps", .timeLimit(.minutes(2)))
struct ChunkLifetimeStressTests {
    @Test("Chunks kept past the next read and released on another thread keep the body's bytes")
    func keptChunksStayIntact() async throws {
        // A pattern that differs at every offset a receive buffer could be reused at.
        let payload = Data((0..<400_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 12) })
        try await HTTPTestContext.with { context in
            context.origin.setRoute("/body", OriginRoute(body: payload, behavior: .init(chunkSize: 8_192)))
            for _ in 0..<6 {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<16 {
                        group.addTask {
                            let delegate = ChunkKeepingDelegate(payload: payload)
                            let (data, _) = try await context.session.data(
                                for: .init(url: context.origin.url("/body")),
                                delegate: delegate
                            )
                            delegate.releases.sync {}
                            let (received, damaged) = delegate.state.withLock { ($0.received, $0.damaged) }
                            #expect(data == payload)
                            #expect(received == payload.count)
                            #expect(damaged == 0)
                        }
                    }
                    try await group.waitForAll()
                }
            }
        }
    }
}
