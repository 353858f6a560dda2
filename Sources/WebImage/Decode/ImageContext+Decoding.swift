import Foundation
@_spi(WebImageInternals) import WebImageCoders

extension ImageContext {
    /// Decodes `data` as `options` ask on the context's ``ImageWorkQueue`` (at the options'
    /// priority), within its ``DecodingMemoryBudget``: work that finds the budget full gives its
    /// place back and queues again once enough is released. An image that alone needs more than
    /// the whole budget fails with `limitExceeded`.
    ///
    /// `completion` runs once, on a worker thread, with the result, or with `nil` when
    /// `isCancelled` said so before the decode started (the work then costs nothing more).
    ///
    /// For custom ``ImageLoading`` loaders (SDWebImage's `SDImageLoaderDecodeImageData`): their
    /// bytes decoded as the built-in loaders decode theirs.
    public func decode(
        _ data: Data,
        options: ImageOptions,
        isCancelled: @escaping @Sendable () -> Bool = { false },
        completion: @escaping @Sendable (Result<DecodedImage, CoderError>?) -> Void
    ) {
        let decodingOptions = decodingOptions(for: options)
        let coders = coders ?? .shared
        runWithinBudget(
            options: options,
            bytes: { budget in Self.reservation(for: data, options: decodingOptions, budget: budget) },
            isCancelled: isCancelled,
            work: { Result { () throws(CoderError) in try coders.decode(data, options: decodingOptions) } },
            completion: completion
        )
    }

    /// Decodes the animation `data` a frame at a time on the context's queue and passes each
    /// frame, as a one-frame image, to `transformer` before the next is decoded: the budget
    /// holds one frame's canvases (``AnimatedImage/bytesPerFrame``), the caller the transformed
    /// frames (limited by ``ImageDecodingOptions/maxAnimationBytes``). `completion` runs once,
    /// on a worker thread: the animation, `.success(nil)` when the transformer gave no image,
    /// the decode's error, or `nil` when cancelled before the work started.
    func decodeTransformingEachFrame(
        _ data: Data,
        options: ImageOptions,
        transformer: any ImageTransformer,
        key: String,
        isCancelled: @escaping @Sendable () -> Bool,
        completion: @escaping @Sendable (Result<DecodedImage?, CoderError>?) -> Void
    ) {
        let cancellation = CodingCancellation()
        let decodingOptions = decodingOptions(for: options, cancellation: cancellation)
        runWithinBudget(
            options: options,
            bytes: { budget in Self.frameReservation(for: data, budget: budget) },
            isCancelled: isCancelled,
            work: {
                Result { () throws(CoderError) in
                    let animation = try AnimatedImage(data: data, options: decodingOptions)
                    return try animation.decodedImage(transformingEachFrame: { frame in
                        let transformed = transformer.transform(frame, forKey: key)
                        // Checked after each frame: the next one is not decoded for nobody.
                        if isCancelled() { cancellation.cancel() }
                        return transformed
                    })
                }
            },
            completion: completion
        )
    }

    /// Runs `work` on the context's queue at the options' priority once the budget granted the
    /// bytes `bytes` asks for; `completion` gets its result, an error when the bytes exceed the
    /// whole budget, or `nil` when `isCancelled` said so before the work started.
    private func runWithinBudget<Value: Sendable>(
        options: ImageOptions,
        bytes: @escaping @Sendable (DecodingMemoryBudget) -> Result<Int, CoderError>,
        isCancelled: @escaping @Sendable () -> Bool,
        work: @escaping @Sendable () -> Result<Value, CoderError>,
        completion: @escaping @Sendable (Result<Value, CoderError>?) -> Void
    ) {
        let queue = decodeQueue ?? .decoding
        let priority = ImageWorkQueue.Priority(options)
        let budget = decodingMemoryBudget ?? .shared
        let run: @Sendable (DecodingMemoryBudget.Reservation) -> Void = { reservation in
            guard !isCancelled() else {
                reservation.release()
                return completion(nil)
            }
            let result = work()
            reservation.release()
            completion(result)
        }
        queue.enqueue(priority: priority) {
            guard !isCancelled() else { return completion(nil) }
            switch bytes(budget) {
            case .failure(let error):
                completion(.failure(error))
            case .success(let bytes):
                let granted = budget.reserve(bytes) { reservation in
                    queue.enqueue(priority: priority) { run(reservation) }
                }
                if let granted { run(granted) }
            }
        }
    }

    /// ``decode(_:options:isCancelled:completion:)`` on the calling thread, which it blocks
    /// while the budget has no room.
    func decodeWaiting(_ data: Data, options: ImageOptions) -> Result<DecodedImage, CoderError> {
        let decodingOptions = decodingOptions(for: options)
        let budget = decodingMemoryBudget ?? .shared
        let bytes: Int
        switch Self.reservation(for: data, options: decodingOptions, budget: budget) {
        case .failure(let error): return .failure(error)
        case .success(let value): bytes = value
        }
        let granted = Protected<DecodingMemoryBudget.Reservation?>(nil)
        let room = DispatchSemaphore(value: 0)
        let reservation =
            budget.reserve(bytes) { reservation in
                granted.withLock { $0 = reservation }
                room.signal()
            }
            ?? {
                room.wait()
                return granted.withLock { $0 }!
            }()
        defer { reservation.release() }
        return Result { () throws(CoderError) in try (coders ?? .shared).decode(data, options: decodingOptions) }
    }

    /// The bytes a decode of `data` reserves, or the error when they exceed the whole budget.
    private static func reservation(
        for data: Data,
        options: ImageDecodingOptions,
        budget: DecodingMemoryBudget
    ) -> Result<Int, CoderError> {
        let header = ImageHeader(data)
        let bytes = header?.decodedByteCount(with: options) ?? 0
        guard budget.admits(bytes) else {
            let size = header.map { " (\($0.size)\($0.frameCount > 1 ? " × \($0.frameCount) frames" : ""))" } ?? ""
            return .failure(
                .limitExceeded(
                    header?.format ?? .unknown,
                    "decoding it\(size) takes \(mebibytes(bytes)), more than the "
                        + "\(mebibytes(budget.limit)) decoding memory budget"
                )
            )
        }
        return .success(bytes)
    }

    private func decodingOptions(for options: ImageOptions, cancellation: CodingCancellation) -> ImageDecodingOptions {
        var decodingOptions = decodingOptions(for: options)
        decodingOptions.cancellation = cancellation
        return decodingOptions
    }

    /// The bytes one frame's decode of the animation `data` reserves (its canvases), or the
    /// error when they exceed the whole budget.
    private static func frameReservation(for data: Data, budget: DecodingMemoryBudget) -> Result<Int, CoderError> {
        guard let header = ImageHeader(data) else { return .success(0) }
        let bytes = AnimatedImage.bytesPerFrame(of: header.format, canvas: header.size)
        guard budget.admits(bytes) else {
            return .failure(
                .limitExceeded(
                    header.format,
                    "decoding one frame of it (\(header.size)) takes \(mebibytes(bytes)), more than the "
                        + "\(mebibytes(budget.limit)) decoding memory budget"
                )
            )
        }
        return .success(bytes)
    }

    private static func mebibytes(_ bytes: Int) -> String {
        bytes >= 1 << 20 ? "\(bytes >> 20) MiB" : "\(bytes) bytes"
    }
}
