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
        /// The quality search for the result, when autoquality is on for it (else ``quality``).
        var autoQuality: AutoQuality? = nil
        /// `format:best`'s candidate formats (``BestFormatSettings``); `nil`: ``choice``'s format.
        var bestCandidates: [ImageFormat]? = nil
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
        if plan.rendersFrameByFrame {
            return try await onDecodeQueue(holding: reservation) { (limits) throws(ProxyError) in
                try Self.renderFrameByFrame(
                    data,
                    plan: plan,
                    configuration: configuration,
                    limits: limits,
                    metrics: metrics
                )
            }
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
            throw decodeFailure(error)
        }
    }

    /// A source over a decoding limit is `limitExceeded`; any other failure `notAnImage` (422).
    private static func decodeFailure(_ error: CoderError) -> ProxyError {
        let code: ProxyError.Code = if case .limitExceeded = error { .limitExceeded } else { .notAnImage }
        return ProxyError(code, "the source cannot be decoded: \(error)")
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
        let clock = ContinuousClock()
        var image = source
        if image.frames.count > configuration.limits.maxAnimationFrames {
            image.frames = Array(image.frames.prefix(configuration.limits.maxAnimationFrames))
        }
        let transformStarted = clock.now
        let (processed, format) = try process(
            image,
            plan: plan,
            configuration: configuration,
            limits: limits,
            metrics: metrics
        )
        let encodeStarted = clock.now
        let (encoded, written) =
            if let candidates = plan.request.bestCandidates {
                try writeBest(
                    processed,
                    candidates: candidates,
                    plan: plan,
                    configuration: configuration,
                    limits: limits
                )
            } else {
                (try encode(processed, as: format, plan: plan, configuration: configuration, limits: limits), format)
            }
        let timings = (Duration.zero, encodeStarted - transformStarted, clock.now - encodeStarted)
        return Rendered(data: encoded, format: written, timings: timings)
    }

    /// Trims, resizes, crops, pads, strips and watermarks `image` (every frame it holds) as the
    /// plan says; the format it is to be written in.
    private static func process(
        _ image: DecodedImage,
        plan: RenderPlan,
        configuration: ImageProxyConfiguration,
        limits: WorkLimits,
        metrics: ProxyMetrics
    ) throws(ProxyError) -> (DecodedImage, ImageFormat) {
        let options = plan.options
        // Trimmed first: the result's size is planned on what the trim keeps.
        guard let trimmed = ImageProcessor.trimmed(image, options: options, cancellation: limits.cancellation) else {
            throw .cancelled
        }
        var untrimmed = options
        untrimmed.trim = nil
        let format = plan.outputFormat(sourceHasAlpha: trimmed.hasAlpha)
        let plannedSize = ImageProcessor.plannedSize(of: trimmed)
        let geometry: ResizeGeometry
        if let planned = plan.geometry(for: plannedSize, orientation: trimmed.orientation) {
            geometry = planned
        } else {
            // Only the decoded pixels tell this size (a trim, a decoder that chose another).
            metrics.computedGeometry(count: 1)
            geometry = ResizeGeometry(source: plannedSize, orientation: trimmed.orientation, options: untrimmed)
            try configuration.limits.checkResult(geometry.padded)
        }
        guard
            var processed = ImageProcessor.process(
                trimmed,
                geometry: geometry,
                options: untrimmed,
                cancellation: limits.cancellation
            ),
            !limits.cancellation.isCancelled
        else { throw .cancelled }  // stopped: onDecodeQueue answers with the reason
        if options.stripMetadata { processed.stripMetadata(keepingCopyright: options.keepCopyright) }
        if let watermark = options.watermark, let image = plan.request.watermark {
            processed = WatermarkComposer.apply(
                try image.bitmap(),
                to: processed,
                options: watermark,
                opacity: watermark.opacity * configuration.watermarkOpacity,
                dprScale: geometry.dprScale
            )
        }
        return (processed, format)
    }

    /// `processed` written as `format` at the plan's quality (within `maxBytes`).
    private static func encode(
        _ processed: DecodedImage,
        as format: ImageFormat,
        plan: RenderPlan,
        configuration: ImageProxyConfiguration,
        limits: WorkLimits
    ) throws(ProxyError) -> Data {
        do {
            var encoding = configuration.encoders.options(quality: plan.request.quality)
            encoding.progressive =
                format == .jpeg ? configuration.jpegProgressive : format == .png && configuration.pngInterlaced
            encoding.cancellation = limits.cancellation
            if let autoQuality = plan.request.autoQuality, AutoQualitySettings.formats.contains(format) {
                let chosen = try ImageCodersManager.shared.encode(
                    processed,
                    as: format,
                    options: encoding,
                    autoQuality: autoQuality
                )
                let maxBytes = plan.options.maxBytes
                guard maxBytes > 0, chosen.data.count > maxBytes else { return chosen.data }
                encoding.quality = Double(chosen.quality) / 100  // max_bytes goes on from the chosen quality
            }
            return try Self.encode(processed, as: format, options: encoding, maxBytes: plan.options.maxBytes)
        } catch {
            throw encodeFailure(error)
        }
    }

    /// `processed` in the `best` of `candidates` (``BestFormatChooser``), each at its own quality.
    private static func writeBest(
        _ processed: DecodedImage,
        candidates: [ImageFormat],
        plan: RenderPlan,
        configuration: ImageProxyConfiguration,
        limits: WorkLimits
    ) throws(ProxyError) -> (Data, ImageFormat) {
        let options = plan.options
        let settings = configuration.bestFormat
        var searches: [ImageFormat: AutoQuality] = [:]
        for format in candidates {
            searches[format] = try configuration.autoQuality.resolved(
                options.autoQuality,
                urlQuality: options.quality,
                format: format
            )
        }
        let megapixels = Double(processed.width * processed.height) / 1_000_000
        let best = BestFormat(
            candidates: candidates,
            complexityThreshold: settings.complexityThreshold,
            lossyTrials: settings.maxResolution > 0 && megapixels > settings.maxResolution ? 1 : 2,
            options: { format in
                let quality =
                    options.quality ?? options.formatQuality[format] ?? configuration.formatQuality[format]
                    ?? configuration.defaultQuality
                var encoding = configuration.encoders.options(quality: quality)
                encoding.cancellation = limits.cancellation
                return encoding
            },
            autoQuality: { [searches] format in searches[format] }
        )
        do {
            return try best.encode(processed)
        } catch {
            throw limits.cancellation.isCancelled ? .cancelled : encodeFailure(error)
        }
    }

    /// A result the format cannot hold (an ICO over 256×256) is the request's limit; anything
    /// else is the encoder failing.
    private static func encodeFailure(_ error: any Error) -> ProxyError {
        let code: ProxyError.Code =
            if case .limitExceeded = error as? CoderError { .limitExceeded } else { .encodeFailed }
        return ProxyError(code, "the result cannot be encoded: \(error)")
    }

    /// An animation rendered a frame at a time (``RenderPlan/rendersFrameByFrame``): each
    /// source frame is decoded, processed and added to the encoder before the next one is
    /// decoded, so the render holds one frame's canvases, one result frame and the encoder's
    /// state whatever the frame count. At most `maxAnimationFrames` frames; the deadline and a
    /// client that went away stop it between frames (and inside each stage).
    private static func renderFrameByFrame(
        _ data: Data,
        plan: RenderPlan,
        configuration: ImageProxyConfiguration,
        limits: WorkLimits,
        metrics: ProxyMetrics
    ) throws(ProxyError) -> Rendered {
        var decoding = plan.decoding
        decoding.cancellation = limits.cancellation
        decoding.colorPolicy = .convertToSRGB  // a streamed result carries no profile
        let animation: AnimatedImage
        do {
            animation = try AnimatedImage(data: data, options: decoding)
        } catch {
            throw decodeFailure(error)
        }
        let format = plan.request.choice.format
        var encoding = configuration.encoders.options(quality: plan.request.quality)
        encoding.cancellation = limits.cancellation
        let count = min(animation.frameCount, configuration.limits.maxAnimationFrames)
        var timings = (decode: Duration.zero, transform: Duration.zero, encode: Duration.zero)
        let clock = ContinuousClock()
        var encoder: AnimationEncoder?
        for index in 0..<count {
            let started = clock.now
            let frame: DecodedImage.Frame
            do {
                frame = try animation.frame(at: index)
            } catch {
                throw limits.cancellation.isCancelled ? .cancelled : decodeFailure(error)
            }
            let decoded = clock.now
            let source = DecodedImage(
                frames: [frame],
                loopCount: animation.loopCount,
                format: animation.info.format,
                orientation: animation.info.orientation,
                sourceSize: animation.info.canvasSize,
                sourceFrameCount: animation.frameCount
            )
            let (processed, _) = try process(
                source,
                plan: plan,
                configuration: configuration,
                limits: limits,
                metrics: metrics
            )
            let transformed = clock.now
            do {
                if encoder == nil {
                    encoder = try AnimationEncoder(
                        format: format,
                        canvasSize: PixelSize(width: processed.width, height: processed.height),
                        frameCount: count,
                        loopCount: animation.loopCount,
                        options: encoding
                    )
                }
                try encoder?.add(processed.frames[0])
            } catch {
                throw limits.cancellation.isCancelled ? .cancelled : encodeFailure(error)
            }
            timings.decode += decoded - started
            timings.transform += transformed - decoded
            timings.encode += clock.now - transformed
        }
        let finishing = clock.now
        do {
            guard let encoder else { throw CoderError.encodingFailed(format, "the animation has no frame") }
            let encoded = try encoder.finish()
            timings.encode += clock.now - finishing
            return Rendered(data: encoded, format: format, timings: timings)
        } catch {
            throw encodeFailure(error)
        }
    }

    /// The result encoded at the options' quality; with `maxBytes` (JPEG, WebP, AVIF and JPEG XL), encoded again at
    /// lower qualities until it fits or the quality reaches 10, stepping as imgproxy's
    /// `saveImageToFitBytes` does (a quarter, half or three quarters of the quality by how far
    /// over the size is).
    private static func encode(
        _ image: DecodedImage,
        as format: ImageFormat,
        options: ImageEncodingOptions,
        maxBytes: Int
    ) throws -> Data {
        var encoding = options
        var quality = ResizeGeometry.round(options.quality * 100)
        while true {
            encoding.quality = Double(quality) / 100
            let encoded = try ImageCodersManager.shared.encode(image, as: format, options: encoding)
            guard maxBytes > 0, [.jpeg, .webp, .avif, .jxl].contains(format), encoded.count > maxBytes, quality > 10
            else {
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
            with: ImageDecodingOptions(maxPixelCount: configuration.limits.maxSourcePixels)
        )
        guard configuration.memoryBudget.admits(bytes) else {
            throw ProxyError(
                .limitExceeded,
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
                options: ImageDecodingOptions(maxPixelCount: configuration.limits.maxSourcePixels)
            )
        } catch {
            throw ProxyError(.notAnImage, "the source cannot be decoded: \(error)")
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
