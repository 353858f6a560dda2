import Foundation
import Synchronization
import WebImage
import WebImageCoders

extension ImageProxy {
    /// What rendering produced, and how long each stage took.
    struct Rendered: Sendable {
        var data: Data
        var format: ImageFormat
        var timings: (decode: Duration, transform: Duration, encode: Duration)
    }

    /// What one render is asked to make: the options, the output format and quality, and the
    /// server's watermark image when `watermark` asks for it.
    struct RenderRequest: Sendable {
        var options: ProcessingOptions
        var choice: OutputFormatChoice
        var quality: Int
        var watermark: WatermarkImage?
    }

    /// The limits a body on the decode queue works within: the cancellation raised when the
    /// processing timeout (counted from when it was queued) passes or the request is cancelled.
    /// Decoders, the processor and encoders check it; they get no time limit of their own, so a
    /// stop at the deadline is always answered as the timeout it is.
    struct WorkLimits: Sendable {
        let cancellation: CodingCancellation
    }

    /// Runs `body` on the library's decode queue (bounded, off the caller's thread pool), giving
    /// up after the processing timeout (504) or when the task is cancelled. Work that has not
    /// started by then never starts; work already running is told to stop (its ``WorkLimits``'
    /// cancellation) and is waited for, so the worker slot and `reservation` are freed only when
    /// it has ended: its memory and CPU stay counted.
    func onDecodeQueue<Value: Sendable>(
        holding reservation: DecodingMemoryBudget.Reservation? = nil,
        _ body: @escaping @Sendable (WorkLimits) throws(ProxyError) -> Value
    ) async throws(ProxyError) -> Value {
        let timeout = configuration.processingTimeout
        let limits = WorkLimits(cancellation: CodingCancellation())
        let outcome = Outcome<Value>(cancellation: limits.cancellation, reservation: reservation)
        // The deadline is a dispatch timer, not a task: it fires on time however busy the
        // cooperative pool is, and its reason (504) answers whatever the stopped work throws.
        // A timer source, unlike `asyncAfter`, lets go of its handler (and the outcome) as soon
        // as it is cancelled, instead of holding both until the timeout would have passed.
        let deadline = DispatchSource.oneShot(after: timeout) { outcome.stop(.processingTimedOut(timeout)) }
        defer { deadline.cancel() }
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                outcome.wait(continuation)
                ImageWorkQueue.decoding.enqueue {
                    guard outcome.begin() else {  // timed out or cancelled while queued
                        reservation?.release()
                        return
                    }
                    let result = Result { () throws(ProxyError) in try body(limits) }
                    reservation?.release()  // before the waiter hears: the memory is free by then
                    outcome.finish(result)
                }
            }
        } onCancel: {
            outcome.stop(.cancelled)
        }
        return try result.get()
    }

    /// Decodes (or takes the decode kept for this source and size), processes and encodes, on
    /// the library's work queue, as `plan` says.
    func render(
        _ data: Data,
        plan: RenderPlan,
        source: (url: URL, fingerprint: String)
    ) async throws(ProxyError) -> Rendered {
        let configuration = configuration
        let decoding = plan.decoding
        let cache = decodedSources
        let key = DecodedSourceCache.Key(
            sourceURL: source.url.absoluteString,
            sourceFingerprint: source.fingerprint,
            decodedSize: plan.decodedSize,
            firstFrameOnly: decoding.firstFrameOnly,
            maxFrameCount: decoding.maxFrameCount,
            colorPolicy: decoding.colorPolicy,
            keepsMetadata: decoding.keepsMetadata,
            embeddedThumbnail: decoding.prefersEmbeddedThumbnail
        )
        let metrics = metrics
        let bytes = plan.memory
        guard let reservation = await configuration.memoryBudget.reserveUnlessCancelled(bytes) else {
            throw .cancelled
        }
        return try await onDecodeQueue(holding: reservation) { (limits) throws(ProxyError) in
            let decodeStarted = ContinuousClock.now
            let image: DecodedImage
            if let cached = cache?.image(for: key) {
                image = cached
                metrics.lookedUpDecodedSource(found: true)
            } else {
                var decoding = decoding
                decoding.cancellation = limits.cancellation
                image = try Self.decode(data, options: decoding)
                if let cache {
                    metrics.lookedUpDecodedSource(found: false)
                    // Kept only when the decoder did what the key says (a decoder that reduced
                    // differently must not answer another request's key).
                    if PixelSize(width: image.bitmap.width, height: image.bitmap.height) == key.decodedSize {
                        cache.store(image, for: key)
                    }
                    metrics.decodedSourceCacheBytes(cache.cost)
                }
            }
            let decoded = ContinuousClock.now
            var rendered = try Self.render(
                image,
                plan: plan,
                configuration: configuration,
                limits: limits,
                metrics: metrics
            )
            rendered.timings.decode = decoded - decodeStarted
            return rendered
        }
    }

    /// Decodes within the limits: a source over one is `limitExceeded`, any other failure
    /// `notAnImage` (422). A decode stopped by the deadline or the cancellation throws here too;
    /// ``onDecodeQueue`` answers with the reason it stopped the work instead.
    private static func decode(
        _ data: Data,
        options decoding: ImageDecodingOptions
    ) throws(ProxyError) -> DecodedImage {
        do {
            return try ImageCodersManager.shared.decode(data, options: decoding)
        } catch {
            let code: ProxyError.Code = if case .limitExceeded = error { .limitExceeded } else { .notAnImage }
            throw ProxyError(status: 422, code: code, message: "the source cannot be decoded: \(error)")
        }
    }

    /// Processes and encodes a decoded source. An animation keeps its first `maxAnimationFrames`
    /// frames, as imgproxy does; the source's summed pixels were checked against the resolution
    /// limit before decoding. The decode's time is the caller's to fill in.
    private static func render(
        _ source: DecodedImage,
        plan: RenderPlan,
        configuration: ImageProxyConfiguration,
        limits: WorkLimits,
        metrics: ProxyMetrics
    ) throws(ProxyError) -> Rendered {
        let options = plan.options
        let request = plan.request
        let clock = ContinuousClock()
        var image = source
        if image.frames.count > configuration.maxAnimationFrames {
            image.frames = Array(image.frames.prefix(configuration.maxAnimationFrames))
        }
        let transformStarted = clock.now
        // Trimmed first: the result's size is planned on what the trim keeps.
        guard let trimmed = ImageProcessor.trimmed(image, options: options, cancellation: limits.cancellation) else {
            throw .cancelled
        }
        image = trimmed
        var untrimmed = options
        untrimmed.trim = nil
        let format = plan.outputFormat(sourceHasAlpha: image.hasAlpha)
        let plannedSize = ImageProcessor.plannedSize(of: image)
        let geometry: ResizeGeometry
        if let planned = plan.geometry(for: plannedSize, orientation: image.orientation) {
            geometry = planned
        } else {
            // Only the decoded pixels tell this size (a trim, a decoder that chose another).
            metrics.computedGeometry(count: 1)
            geometry = ResizeGeometry(source: plannedSize, orientation: image.orientation, options: untrimmed)
            try checkResultSize(geometry.padded, configuration: configuration)
        }
        guard
            var processed = ImageProcessor.process(
                image,
                geometry: geometry,
                options: untrimmed,
                cancellation: limits.cancellation
            ),
            !limits.cancellation.isCancelled
        else { throw .cancelled }  // stopped: onDecodeQueue answers with the reason
        if options.stripMetadata { processed.stripMetadata(keepingCopyright: options.keepCopyright) }
        if let watermark = options.watermark, let image = request.watermark {
            processed = WatermarkComposer.apply(
                try image.bitmap(),
                to: processed,
                options: watermark,
                opacity: watermark.opacity * configuration.watermarkOpacity,
                dprScale: geometry.dprScale
            )
        }
        let encodeStarted = clock.now
        do {
            let encoded = try Self.encode(
                processed,
                as: format,
                quality: request.quality,
                maxBytes: options.maxBytes,
                progressive: format == .jpeg
                    ? configuration.jpegProgressive : format == .png && configuration.pngInterlaced,
                limits: limits
            )
            let timings = (Duration.zero, encodeStarted - transformStarted, clock.now - encodeStarted)
            return Rendered(data: encoded, format: format, timings: timings)
        } catch {
            throw ProxyError(status: 422, code: .notAnImage, message: "the result cannot be encoded: \(error)")
        }
    }

    /// The result encoded at `quality`; with `maxBytes` (JPEG, WebP and AVIF), encoded again at
    /// lower qualities until it fits or the quality reaches 10, stepping as imgproxy's
    /// `saveImageToFitBytes` does (a quarter, half or three quarters of the quality by how far
    /// over the size is).
    private static func encode(
        _ image: DecodedImage,
        as format: ImageFormat,
        quality: Int,
        maxBytes: Int,
        progressive: Bool,
        limits: WorkLimits
    ) throws -> Data {
        var quality = quality
        while true {
            var encoding = ImageEncodingOptions(
                quality: Double(quality) / 100,
                progressive: progressive,
                maxEncodeDuration: nil
            )
            encoding.cancellation = limits.cancellation
            let encoded = try ImageCodersManager.shared.encode(image, as: format, options: encoding)
            guard maxBytes > 0, [.jpeg, .webp, .avif].contains(format), encoded.count > maxBytes, quality > 10 else {
                return encoded
            }
            let over = Double(encoded.count) / Double(maxBytes)
            let step = over > 3 ? 0.25 : over > 1.5 ? 0.5 : 0.75
            quality = max(1, min(quality - 1, ResizeGeometry.round(Double(quality) * step)))
        }
    }

    /// `/info`: the source's facts as JSON.
    func info(_ data: Data, header: ImageHeader) async throws(ProxyError) -> ProxyResponse {
        let configuration = configuration
        let bytes = header.decodedByteCount(
            with: ImageDecodingOptions(maxPixelCount: Int(configuration.maxSourceResolution * 1_000_000))
        )
        guard configuration.memoryBudget.admits(bytes) else {
            throw ProxyError(
                status: 422,
                code: .limitExceeded,
                message:
                    "the source would need \(Self.megabytes(bytes)) MB decoded, over the budget of \(Self.megabytes(configuration.memoryBudget.limit)) MB"
            )
        }
        guard let reservation = await configuration.memoryBudget.reserveUnlessCancelled(bytes) else {
            throw .cancelled
        }
        let body = try await onDecodeQueue(holding: reservation) { (_) throws(ProxyError) in
            try Self.describe(data, header: header, configuration: configuration)
        }
        return ProxyResponse(
            status: 200,
            headers: [("Content-Type", "application/json"), ("Cache-Control", "public, max-age=\(configuration.ttl)")],
            body: body
        )
    }

    private static func describe(
        _ data: Data,
        header: ImageHeader,
        configuration: ImageProxyConfiguration
    )
        throws(ProxyError) -> Data
    {
        let image: DecodedImage
        do {
            image = try ImageCodersManager.shared.decode(
                data,
                options: ImageDecodingOptions(maxPixelCount: Int(configuration.maxSourceResolution * 1_000_000))
            )
        } catch {
            throw ProxyError(status: 422, code: .notAnImage, message: "the source cannot be decoded: \(error)")
        }
        let object: [String: Any] = [
            "width": header.size.width, "height": header.size.height, "format": header.format.rawValue,
            "frames": max(header.frameCount, image.frames.count), "animated": image.frames.count > 1,
            "orientation": image.orientation.rawValue, "hasAlpha": image.hasAlpha, "bytes": data.count,
            "dominantColor": ImageSummary.dominantColor(of: image.bitmap),
            "blurhash": ImageSummary.blurhash(of: image.bitmap),
        ]
        return (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
    }

}

/// The result of one body on the decode queue, handed to one waiting continuation: the body's
/// own, or the reason it was stopped (a timeout, a cancellation). A body stopped while queued
/// never starts and the waiter is answered at once; a running one is told to stop and answered
/// when it ends. Thread-safe; resumes outside its lock.
private final class Outcome<Value: Sendable>: Sendable {
    /// A waiter and the result to resume it with.
    typealias Ready = (CheckedContinuation<Result<Value, ProxyError>, Never>, Result<Value, ProxyError>)

    private struct State {
        var stopReason: ProxyError?
        var started = false
        var result: Result<Value, ProxyError>?
        var continuation: CheckedContinuation<Result<Value, ProxyError>, Never>?

        /// The continuation to resume with `result`, once both are there.
        mutating func takeReady() -> Ready? {
            guard let continuation, let result else { return nil }
            self.continuation = nil
            return (continuation, result)
        }
    }

    private let state = Mutex(State())
    private let cancellation: CodingCancellation
    /// Released when a body stopped before it started is answered (it allocated nothing); the
    /// queued closure releases it otherwise, once the body has ended.
    private let reservation: DecodingMemoryBudget.Reservation?

    init(cancellation: CodingCancellation, reservation: DecodingMemoryBudget.Reservation?) {
        self.cancellation = cancellation
        self.reservation = reservation
    }

    /// Hands the result to `continuation`, now or when it arrives.
    func wait(_ continuation: CheckedContinuation<Result<Value, ProxyError>, Never>) {
        let ready = state.withLock { state in
            state.continuation = continuation
            return state.takeReady()
        }
        if let (continuation, result) = ready { continuation.resume(returning: result) }
    }

    /// Whether the body may run (it was not stopped while queued).
    func begin() -> Bool {
        state.withLock { state in
            guard state.stopReason == nil else { return false }
            state.started = true
            return true
        }
    }

    /// The body ended: its result, unless it was stopped (then the reason).
    func finish(_ result: Result<Value, ProxyError>) {
        let ready = state.withLock { state in
            state.result = state.stopReason.map { .failure($0) } ?? result
            return state.takeReady()
        }
        if let (continuation, result) = ready { continuation.resume(returning: result) }
    }

    /// Stops the body for `reason` unless it ended or was stopped already: one not started is
    /// answered now (its memory released); a running one is cancelled and answered when it ends.
    func stop(_ reason: ProxyError) {
        let (stopped, started, ready) = state.withLock { state -> (Bool, Bool, Ready?) in
            guard state.stopReason == nil, state.result == nil else { return (false, false, nil) }
            state.stopReason = reason
            if !state.started { state.result = .failure(reason) }
            return (true, state.started, state.takeReady())
        }
        if stopped { cancellation.cancel() }
        if stopped && !started { reservation?.release() }
        if let (continuation, result) = ready { continuation.resume(returning: result) }
    }
}
