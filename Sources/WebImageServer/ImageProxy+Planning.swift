import Foundation
import WebImage
import WebImageCoders

/// What a render may cost, decided before any work: the memory it reserves and the result
/// limits it must keep.
extension ImageProxy {
    /// The bytes a render of `plan` will allocate at most: the decoded source, the result's
    /// frames, three transient canvases of the result's size (resize, crop or padding,
    /// background) and the encoder's buffers, counted as one more canvas. A trimmed source counts
    /// the largest result the trim can give.
    static func plannedMemory(
        _ plan: RenderPlan,
        header: ImageHeader,
        configuration: ImageProxyConfiguration
    ) throws(ProxyError) -> Int {
        let options = plan.options
        let decoding = plan.decoding
        var largest = PixelSize(width: 0, height: 0)
        for planned in plan.geometries {
            let output = planned.geometry.padded
            if output.pixelCount > largest.pixelCount { largest = output }
            if options.trim != nil {
                let bound = trimmedResultBound(planned.geometry, options: options, configuration: configuration)
                if bound.pixelCount > largest.pixelCount { largest = bound }
            }
        }
        let canvas = largest.pixelCount.multipliedReportingOverflow(by: 4)
        let frames =
            decoding.firstFrameOnly ? 1 : max(1, min(header.frameCount, configuration.limits.maxAnimationFrames))
        let results = canvas.partialValue.multipliedReportingOverflow(
            by: frames + 4 + (options.watermark == nil ? 0 : 1)
        )
        let (bytes, overflow) = header.decodedByteCount(with: decoding).addingReportingOverflow(results.partialValue)
        let budget = configuration.memoryBudget.limit
        guard !canvas.overflow, !results.overflow, !overflow, configuration.memoryBudget.admits(bytes) else {
            throw ProxyError(
                .limitExceeded,
                "the result would need \(megabytes(bytes)) MB of memory, over the budget of \(megabytes(budget)) MB"
            )
        }
        return bytes
    }

    /// The largest result a trimmed source can give, whatever the trim keeps: each side no more
    /// than the source's (times `dpr` and `zoom`, plus padding), or the result limits with
    /// `enlarge`; never less than the untrimmed plan.
    static func trimmedResultBound(
        _ geometry: ResizeGeometry,
        options: ProcessingOptions,
        configuration: ImageProxyConfiguration
    ) -> PixelSize {
        let limit = configuration.limits.maxResultDimension
        let growth = max(1, options.dpr) * max(1, options.zoomWidth, options.zoomHeight)
        func side(_ source: Int, _ planned: Int, _ padding: Int) -> Int {
            options.enlarge ? limit : min(limit, max(planned, Int((Double(source) * growth).rounded(.up)) + padding))
        }
        let bands = geometry.padding
        var bound = PixelSize(
            width: side(
                max(geometry.source.width, geometry.source.height),
                geometry.padded.width,
                bands.left + bands.right
            ),
            height: side(
                max(geometry.source.width, geometry.source.height),
                geometry.padded.height,
                bands.top + bands.bottom
            )
        )
        let pixelLimit = Int(configuration.limits.maxResultResolution * 1_000_000)
        if bound.pixelCount > pixelLimit {
            bound = PixelSize(width: max(1, pixelLimit / bound.height), height: bound.height)
        }
        return bound
    }

    /// Refuses a result over `--max-result-dimension` or `--max-result-resolution`.
    static func checkResultSize(_ size: PixelSize, configuration: ImageProxyConfiguration) throws(ProxyError) {
        guard max(size.width, size.height) <= configuration.limits.maxResultDimension else {
            throw ProxyError(
                .limitExceeded,
                "the result would be \(size.width)×\(size.height), over --max-result-dimension \(configuration.limits.maxResultDimension)"
            )
        }
        let megapixels = Double(size.pixelCount) / 1_000_000
        guard megapixels <= configuration.limits.maxResultResolution else {
            throw ProxyError(
                .limitExceeded,
                "the result would be \(size.width)×\(size.height) (\(String(format: "%.1f", megapixels)) megapixels), over --max-result-resolution \(configuration.limits.maxResultResolution)"
            )
        }
    }

    static func megabytes(_ bytes: Int) -> Int { bytes / 1_000_000 }
}
