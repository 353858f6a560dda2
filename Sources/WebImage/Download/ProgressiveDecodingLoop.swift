import Foundation
import Synchronization
@_spi(WebImageInternals) import WebImageCoders

/// Decodes partial images while a download runs, on the context's ``ImageWorkQueue`` (never the
/// cooperative pool or an event loop) and within its ``DecodingMemoryBudget``.
///
/// Chunks queue up while a preview decodes; each turn appends them all and decodes once, so at
/// most one preview decode per load runs or waits at a time, and the bytes are copied once, not
/// once per chunk. Each turn is one piece of queue work: a long download does not keep a place.
/// Previews are best effort: until the budget has room for the image's pixels (which the
/// incremental decoder keeps until the load ends), none are decoded; the final image then waits
/// its turn as any decode does.
final class ProgressiveDecodingLoop: Sendable {
    private struct Feed {
        var pending: [Data] = []
        /// A turn is queued or running; it queues the next one while chunks keep coming.
        var scheduled = false
        var stopped = false
    }

    /// Owned by the one turn that runs at a time; the mutex is never contended while a turn
    /// runs, except by `stop()` when no turn is scheduled.
    private struct Decoding {
        var decoder: (any IncrementalImageDecoding)?
        var received = Data()
        var reservation: DecodingMemoryBudget.Reservation?
    }

    private let feed = Protected(Feed())
    private let decoding = Mutex(Decoding())
    private let coders: ImageCodersManager
    private let options: ImageDecodingOptions
    private let queue: ImageWorkQueue
    private let priority: ImageWorkQueue.Priority
    private let budget: DecodingMemoryBudget
    private let deliver: @Sendable (DecodedImage) -> Void

    /// `deliver` gets each partial image, in order, on a queue worker thread.
    init(
        coders: ImageCodersManager,
        options: ImageDecodingOptions,
        queue: ImageWorkQueue,
        priority: ImageWorkQueue.Priority,
        budget: DecodingMemoryBudget,
        deliver: @escaping @Sendable (DecodedImage) -> Void
    ) {
        self.coders = coders
        self.options = options
        self.queue = queue
        self.priority = priority
        self.budget = budget
        self.deliver = deliver
    }

    /// Offers the next chunk of the body.
    func offer(_ chunk: Data) {
        let schedules = feed.withLock { feed -> Bool in
            guard !feed.stopped else { return false }
            feed.pending.append(chunk)
            guard !feed.scheduled else { return false }
            feed.scheduled = true
            return true
        }
        if schedules { queue.enqueue(priority: priority) { [self] in turn() } }
    }

    /// Stops decoding previews (the final image comes from a one-shot decode) and, once no turn
    /// runs, gives back the decoder and its memory.
    func stop() {
        let idle = feed.withLock { feed -> Bool in
            feed.stopped = true
            feed.pending.removeAll()
            return !feed.scheduled
        }
        if idle { reset() }
    }

    private func turn() {
        let chunks = feed.withLock { feed -> [Data]? in
            guard !feed.stopped else {
                feed.scheduled = false
                return nil
            }
            defer { feed.pending.removeAll(keepingCapacity: true) }
            return feed.pending
        }
        guard let chunks else { return reset() }
        let preview = decoding.withLock { decoding in decodePreview(&decoding, appending: chunks) }
        if let preview { deliver(preview) }
        enum Next { case again, idle, stopped }
        let next = feed.withLock { feed -> Next in
            guard !feed.stopped else {
                feed.scheduled = false
                return .stopped
            }
            feed.scheduled = !feed.pending.isEmpty
            return feed.scheduled ? .again : .idle
        }
        switch next {
        case .again: queue.enqueue(priority: priority) { [self] in turn() }
        case .idle: break
        case .stopped: reset()
        }
    }

    private func decodePreview(_ decoding: inout Decoding, appending chunks: [Data]) -> DecodedImage? {
        for chunk in chunks { decoding.received.append(chunk) }
        if decoding.decoder == nil {
            // The pixels the decoder will hold: known from the header, reserved before it exists.
            guard let decoder = coders.makeIncrementalDecoder(forPrefix: decoding.received, options: options),
                let header = ImageHeader(decoding.received),
                let reservation = budget.reserveIfAvailable(header.decodedByteCount(with: options))
            else { return nil }
            decoding.reservation = reservation
            decoding.decoder = decoder
        }
        // A preview that cannot be decoded yet is skipped; the final decode reports errors.
        guard let image = try? decoding.decoder?.update(decoding.received, isComplete: false), image.isPartial else {
            return nil
        }
        return image
    }

    private func reset() {
        let reservation = decoding.withLock { decoding in
            defer { decoding = Decoding() }
            return decoding.reservation
        }
        reservation?.release()
    }
}
