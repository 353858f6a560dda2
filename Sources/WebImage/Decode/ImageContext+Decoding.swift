import Foundation
import WebImageCoders

extension ImageContext {
    /// Decodes `data` as `options` ask, within the context's ``DecodingMemoryBudget``: on the
    /// calling thread when the budget has room now, else on `queue` once enough is released.
    /// An image that alone needs more than the whole budget fails with `limitExceeded`.
    ///
    /// `completion` runs once, with `waited` telling which way it went; the return value is
    /// `waited` too (`false`: `completion` has already run).
    @discardableResult
    func decode(
        _ data: Data,
        options: ImageOptions,
        laterOn queue: DispatchQueue,
        completion: @escaping @Sendable (_ result: Result<DecodedImage, CoderError>, _ waited: Bool) -> Void
    ) -> Bool {
        let decodingOptions = decodingOptions(for: options)
        let coders = coders ?? .shared
        let budget = decodingMemoryBudget ?? .shared
        let header = ImageHeader(data)
        let bytes = header?.decodedByteCount(with: decodingOptions) ?? 0
        guard budget.admits(bytes) else {
            let size = header.map { " (\($0.size)\($0.frameCount > 1 ? " × \($0.frameCount) frames" : ""))" } ?? ""
            completion(
                .failure(
                    .limitExceeded(
                        header?.format ?? .unknown,
                        "decoding it\(size) takes \(Self.mebibytes(bytes)), more than the "
                            + "\(Self.mebibytes(budget.limit)) decoding memory budget"
                    )
                ),
                false
            )
            return false
        }
        let run: @Sendable (DecodingMemoryBudget.Reservation, Bool) -> Void = { reservation, waited in
            let result = Result { () throws(CoderError) in try coders.decode(data, options: decodingOptions) }
            reservation.release()
            completion(result, waited)
        }
        guard let reservation = budget.reserve(bytes, whenGranted: { granted in queue.async { run(granted, true) } })
        else { return true }
        run(reservation, false)
        return false
    }

    /// ``decode(_:options:laterOn:completion:)`` that blocks the calling thread while it waits.
    func decodeWaiting(_ data: Data, options: ImageOptions) -> Result<DecodedImage, CoderError> {
        let outcome = Protected<Result<DecodedImage, CoderError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        decode(data, options: options, laterOn: .global()) { result, _ in
            outcome.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        return outcome.withLock { $0 }!
    }

    private static func mebibytes(_ bytes: Int) -> String {
        bytes >= 1 << 20 ? "\(bytes >> 20) MiB" : "\(bytes) bytes"
    }
}
