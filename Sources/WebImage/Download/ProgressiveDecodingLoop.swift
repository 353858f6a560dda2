import Foundation
import WebImageCoders

/// Decodes partial images while a download runs: one task owns the incremental decoder and
/// takes the newest data snapshot each time it is free, so at most one partial decode runs and
/// intermediate snapshots are dropped.
final class ProgressiveDecodingLoop: Sendable {
    private let snapshots: AsyncStream<Data>.Continuation
    private let task: Task<Void, Never>

    /// `deliver` gets each partial image, in order, from the loop's task.
    init(coders: ImageCodersManager, options: ImageDecodingOptions, deliver: @escaping @Sendable (DecodedImage) -> Void)
    {
        let (stream, continuation) = AsyncStream.makeStream(of: Data.self, bufferingPolicy: .bufferingNewest(1))
        snapshots = continuation
        task = Task {
            var decoder: (any IncrementalImageDecoding)?
            for await data in stream {
                if Task.isCancelled { break }
                if decoder == nil { decoder = coders.makeIncrementalDecoder(forPrefix: data, options: options) }
                // A preview that cannot be decoded yet is skipped; the final decode reports errors.
                if let image = try? decoder?.update(data, isComplete: false), image.isPartial {
                    deliver(image)
                }
            }
        }
    }

    /// Offers all the data received so far.
    func offer(_ data: Data) { snapshots.yield(data) }

    /// Stops decoding previews (the final image comes from a one-shot decode).
    func stop() {
        snapshots.finish()
        task.cancel()
    }
}
