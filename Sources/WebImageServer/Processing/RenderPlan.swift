import Foundation
import WebImage
import WebImageCoders

/// Everything one render needs, decided once per request before any pixel work: what to make
/// (``ImageProxy/RenderRequest``), how to decode the source, the result's geometry and the memory
/// to reserve. Its initializer (through ``ImageProxy/plan(_:header:)``) checks the limits first (422 before
/// any work); the render then computes geometry only for what the decoded pixels alone tell: a
/// trimmed source's new size, or a size the decoder chose differently.
struct RenderPlan: Sendable {
    /// The result's geometry for a source whose EXIF orientation does (or does not) swap its
    /// sides.
    struct OrientedGeometry: Sendable {
        var swapsDimensions: Bool
        var geometry: ResizeGeometry
    }

    /// The options, output format, quality and watermark.
    var request: ImageProxy.RenderRequest
    /// First frame only unless the result can animate, the limits, and shrink on load down to
    /// what the resize needs.
    var decoding: ImageDecodingOptions
    /// The size of the frames the decoder gives with ``decoding`` (the key of a kept decode).
    var decodedSize: PixelSize
    /// The source's size as stored (before EXIF orientation), from its header.
    var sourceSize: PixelSize
    /// The result's geometry on ``sourceSize``: one for the orientation the header gives, or
    /// both ways when it gives none (EXIF may still turn the image).
    var geometries: [OrientedGeometry]
    /// The bytes the render reserves from the memory budget.
    var memory: Int
    /// An animation rendered a frame at a time: a GIF, WebP or APNG source of several frames
    /// written as GIF or WebP, without a trim (planned on the whole animation) or a byte limit (which
    /// encodes again). Autoquality does not apply to it: its frames are written once, at the
    /// fixed quality.
    var rendersFrameByFrame = false

    var options: ProcessingOptions { request.options }

    /// The geometries for `size` and each orientation `known` allows (both ways when `nil`).
    static func geometries(
        for size: PixelSize,
        orientation known: ImageOrientation?,
        options: ProcessingOptions
    ) -> [OrientedGeometry] {
        let swaps = known.map { [$0.swapsDimensions] } ?? [false, true]
        return swaps.map { swaps in
            OrientedGeometry(
                swapsDimensions: swaps,
                geometry: ResizeGeometry(source: size, orientation: swaps ? .right : .up, options: options)
            )
        }
    }

    /// The format to write: the one chosen from the URL, the source and `Accept`; for a source
    /// we cannot write, PNG when the result may be transparent (imgproxy's rule: no `background`,
    /// and a source with alpha, padding or `extend`), else JPEG.
    func outputFormat(sourceHasAlpha: Bool) -> ImageFormat {
        guard request.choice.format == .unknown else { return request.choice.format }
        let options = request.options
        let expectsTransparency =
            options.background == nil
            && (sourceHasAlpha || !options.padding.isEmpty || options.extend
                || options.extendAspectRatio)
        return expectsTransparency ? .png : .jpeg
    }

    /// The planned geometry for a decoded (and perhaps trimmed) image planned on `size` (as
    /// stored) with `orientation`; `nil` when the plan has none for them.
    func geometry(for size: PixelSize, orientation: ImageOrientation) -> ResizeGeometry? {
        guard size == sourceSize else { return nil }
        return geometries.first { $0.swapsDimensions == orientation.swapsDimensions }?.geometry
    }
}

extension RenderPlan {
    /// Plans one render of `header`'s source on `geometries` (``geometries(for:orientation:options:)``
    /// of the header): the result limits, the decode and the memory, in that order.
    /// - Throws: ``ProxyError`` 422 `limitExceeded` when the result or its memory is over a limit.
    init(
        _ request: ImageProxy.RenderRequest,
        header: ImageHeader,
        geometries: [OrientedGeometry],
        limits: ProxyLimits,
        budget: DecodingMemoryBudget
    ) throws(ProxyError) {
        for planned in geometries { try limits.checkResult(planned.geometry.padded) }
        let decoding = Self.decodingOptions(header: header, request: request, geometries: geometries, limits: limits)
        self.init(
            request: request,
            decoding: decoding,
            decodedSize: header.decodedFrameSize(with: decoding),
            sourceSize: header.size,
            geometries: geometries,
            memory: 0
        )
        rendersFrameByFrame =
            header.frameCount > 1 && AnimatedImage.formats.contains(header.format)
            && AnimationEncoder.formats.contains(request.choice.format)
            && !decoding.firstFrameOnly && request.options.trim == nil && request.options.maxBytes == 0
        memory = try Self.memory(of: self, header: header, limits: limits, budget: budget)
    }

    /// Decoding for one request: first frame only unless the result can animate, the limits,
    /// and shrink on load down to what the planned resize needs.
    static func decodingOptions(
        header: ImageHeader,
        request: ImageProxy.RenderRequest,
        geometries: [OrientedGeometry],
        limits: ProxyLimits
    ) -> ImageDecodingOptions {
        let options = request.options
        let animatable: Set<ImageFormat> = [.gif, .webp, .png, .avif, .jxl]
        var decoding = ImageDecodingOptions(
            firstFrameOnly: !animatable.contains(request.choice.format),
            maxPixelCount: limits.maxSourcePixels,
            maxFrameCount: max(limits.maxAnimationFrames, header.frameCount)
        )
        decoding.maxDecodeDuration = nil  // the render's deadline stops it (``ImageProxy/onDecodeQueue(holding:_:)``)
        decoding.colorPolicy = options.stripColorProfile ? .convertToSRGB : .keep
        decoding.keepsMetadata = !options.stripMetadata || options.keepCopyright
        decoding.prefersEmbeddedThumbnail = options.enforceThumbnail
        // A trimmed source is decoded whole: what the trim keeps is not known before (imgproxy);
        // an enforced thumbnail is decoded as it is.
        decoding.shrinkOnLoadMinimumSize =
            options.trim != nil || options.enforceThumbnail
            ? nil : shrinkOnLoadMinimum(storedSize: header.size, geometries: geometries)
        return decoding
    }

    /// The smallest decoded size (as stored) the resize can start from without losing detail:
    /// the source scaled by the largest resize factor of the planned `geometries`. `nil` when the
    /// result is not smaller than the source.
    static func shrinkOnLoadMinimum(storedSize: PixelSize, geometries: [OrientedGeometry]) -> PixelSize? {
        var factor = 0.0
        for planned in geometries {
            let geometry = planned.geometry
            factor = max(
                factor,
                Double(geometry.scaled.width) / Double(geometry.cropped.width),
                Double(geometry.scaled.height) / Double(geometry.cropped.height)
            )
        }
        guard factor < 1 else { return nil }
        return PixelSize(
            width: Int((Double(storedSize.width) * factor).rounded(.up)),
            height: Int((Double(storedSize.height) * factor).rounded(.up))
        )
    }

    /// The bytes a render of `plan` will allocate at most: the decoded source, the result's
    /// frames, three transient canvases of the result's size (resize, crop or padding,
    /// background) and the encoder's buffers (``encoderCanvases(_:)``); frame by frame, one
    /// frame's source canvases and one result frame instead of every frame. A trimmed source counts
    /// the largest result the trim can give.
    /// - Throws: ``ProxyError`` 422 `limitExceeded` when `budget` can never admit them.
    static func memory(
        of plan: RenderPlan,
        header: ImageHeader,
        limits: ProxyLimits,
        budget: DecodingMemoryBudget
    ) throws(ProxyError) -> Int {
        let options = plan.options
        var largest = PixelSize(width: 0, height: 0)
        for planned in plan.geometries {
            let output = planned.geometry.padded
            if output.pixelCount > largest.pixelCount { largest = output }
            if options.trim != nil {
                let bound = trimmedResultBound(planned.geometry, options: options, limits: limits)
                if bound.pixelCount > largest.pixelCount { largest = bound }
            }
        }
        let canvas = largest.pixelCount.multipliedReportingOverflow(by: 4)
        // Frame by frame: one frame's canvases of the source, one result frame and the
        // encoder's (its previous canvas and candidate encodings, counted as three more).
        let frames =
            plan.rendersFrameByFrame
            ? 1 + 3 : plan.decoding.firstFrameOnly ? 1 : max(1, min(header.frameCount, limits.maxAnimationFrames))
        let results = canvas.partialValue.multipliedReportingOverflow(
            by: frames + 3 + encoderCanvases(plan.request, animated: plan.rendersFrameByFrame || frames > 1)
                + searchCanvases(plan.request.autoQuality)
                + (options.watermark == nil ? 0 : 1)
        )
        let decoded =
            plan.rendersFrameByFrame
            ? AnimatedImage.bytesPerFrame(of: header.format, canvas: header.size)
            : header.decodedByteCount(with: plan.decoding)
        let (bytes, overflow) = decoded.addingReportingOverflow(results.partialValue)
        guard !canvas.overflow, !results.overflow, !overflow, budget.admits(bytes) else {
            throw ProxyError(
                .limitExceeded,
                "the result would need \(ImageProxy.megabytes(bytes)) MB of memory, over the budget of "
                    + "\(ImageProxy.megabytes(budget.limit)) MB"
            )
        }
        return bytes
    }

    /// The encoder's working memory in result canvases (4 bytes a pixel): one for most, 14 for
    /// libjxl 0.7, which holds about 52–57 bytes a pixel while it encodes (measured at effort 4
    /// and 7 on 1 and 12 megapixels), 64 for an AVIF sequence (aom's AV1 state: 120 bytes a pixel
    /// of a 1024² sequence after ten frames, 240 at its peak).
    static func encoderCanvases(_ format: ImageFormat, animated: Bool = false) -> Int {
        switch format {
        case .jxl: 14
        case .avif where animated: 64
        default: 1
        }
    }

    /// The request's encoders: its format's, or for `best` the largest candidate's and the
    /// smallest encoding so far (one more).
    static func encoderCanvases(_ request: ImageProxy.RenderRequest, animated: Bool) -> Int {
        guard let candidates = request.bestCandidates else {
            return encoderCanvases(request.choice.format, animated: animated)
        }
        return (candidates.map { encoderCanvases($0) }.max() ?? 1) + 1
    }

    /// An autoquality search's working memory in result canvases: a trial decoded back and the
    /// difference's planes (DSSIM of lightness holds about 52 bytes a pixel at its peak: two
    /// luminance and two lightness planes, three products and five blurred planes with a
    /// scratch, 4 bytes each; libjxl's Butteraugli more); a size search only its best encoding
    /// so far, counted as one.
    static func searchCanvases(_ autoQuality: AutoQuality?) -> Int {
        switch autoQuality?.method {
        case nil: 0
        case .size: 1
        case .dssim: 16
        case .butteraugli: 32
        }
    }

    /// The largest result a trimmed source can give, whatever the trim keeps: each side no more
    /// than the source's (times `dpr` and `zoom`, plus padding), or the result limits with
    /// `enlarge`; never less than the untrimmed plan.
    static func trimmedResultBound(
        _ geometry: ResizeGeometry,
        options: ProcessingOptions,
        limits: ProxyLimits
    ) -> PixelSize {
        let limit = limits.maxResultDimension
        let growth = max(1, options.dpr) * max(1, options.zoomWidth, options.zoomHeight)
        func side(_ source: Int, _ planned: Int, _ padding: Int) -> Int {
            options.enlarge
                ? limit
                : min(limit, max(planned, ResizeGeometry.saturating((Double(source) * growth).rounded(.up)) + padding))
        }
        let bands = geometry.padding
        let longest = max(geometry.source.width, geometry.source.height)
        var bound = PixelSize(
            width: side(longest, geometry.padded.width, bands.left + bands.right),
            height: side(longest, geometry.padded.height, bands.top + bands.bottom)
        )
        let pixelLimit = limits.maxResultPixels
        if bound.pixelCount > pixelLimit {
            bound = PixelSize(width: max(1, pixelLimit / bound.height), height: bound.height)
        }
        return bound
    }
}

extension ProxyLimits {
    /// Refuses a result over ``maxResultDimension`` or ``maxResultResolution``.
    /// - Throws: ``ProxyError`` 422 `limitExceeded` naming the size and the limit.
    func checkResult(_ size: PixelSize) throws(ProxyError) {
        guard max(size.width, size.height) <= maxResultDimension else {
            throw ProxyError(
                .limitExceeded,
                "the result would be \(size.width)×\(size.height), over --max-result-dimension \(maxResultDimension)"
            )
        }
        let megapixels = Double(size.pixelCount) / 1_000_000
        guard megapixels <= maxResultResolution else {
            throw ProxyError(
                .limitExceeded,
                "the result would be \(size.width)×\(size.height) (\(String(format: "%.1f", megapixels)) megapixels), "
                    + "over --max-result-resolution \(maxResultResolution)"
            )
        }
    }
}

extension ImageProxy {
    /// The ``RenderPlan`` of one render of `header`'s source under the server's limits and
    /// memory budget; its geometry computations are counted in ``ProxyMetrics``.
    /// - Throws: ``ProxyError`` 422 `limitExceeded` when the result or its memory is over a limit.
    func plan(_ request: RenderRequest, header: ImageHeader) throws(ProxyError) -> RenderPlan {
        let geometries = RenderPlan.geometries(
            for: header.size,
            orientation: header.orientation,
            options: request.options
        )
        metrics.computedGeometry(count: geometries.count)
        return try RenderPlan(
            request,
            header: header,
            geometries: geometries,
            limits: configuration.limits,
            budget: configuration.memoryBudget
        )
    }

    static func megabytes(_ bytes: Int) -> Int { bytes / 1_000_000 }
}
