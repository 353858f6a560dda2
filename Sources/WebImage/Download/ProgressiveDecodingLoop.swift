import Foundation
import WebImageCoders

/// Decodes partial images while a download runs: one task owns the incremental decoder and the
/// bytes so far. Chunks queue up while it decodes; each time it is free it appends them all and
/// decodes once, so at most one partial decode runs and the bytes are copied once, not once per
/// chunk (sharing a growing buffer with a pending snapshot made every append copy all of it).
final class ProgressiveDecodingLoop: Sendable {
    private let pending = Protected<[Data]>([])
    private let wakeups: AsyncStream<Void>.Continuation
    private let task: Task<Void, Never>

    /// `deliver` gets each partial image, in order, from the loop's task.
    init(coders: ImageCodersManager, options: ImageDecodingOptions, deliver: @escaping @Sendable (DecodedImage) -> Void)
    {
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        wakeups = continuation
        task = Task { [pending] in
            var decoder: (any IncrementalImageDecoding)?
            var received = Data()
            for await _ in stream {
                if Task.isCancelled { break }
                let chunks = pending.withLock { chunks in
                    defer { chunks.removeAll(keepingCapacity: true) }
                    return chunks
                }
                for chunk in chunks { received.append(chunk) }
                if decoder == nil { decoder = coders.makeIncrementalDecoder(forPrefix: received, options: options) }
                // A preview that cannot be decoded yet is skipped; the final decode reports errors.
                if let image = try? decoder?.update(received, isComplete: false), image.isPartial {
                    deliver(image)
                }
            }
        }
    }

    /// Offers the next chunk of the body.
    func offer(_ chunk: Data) {
        pending.withLock { $0.append(chunk) }
        wakeups.yield()
    }

    /// Stops decoding previews (the final image comes from a one-shot decode).
    func stop() {
        wakeups.finish()
        task.cancel()
        pending.withLock { $0.removeAll() }
    }
}
