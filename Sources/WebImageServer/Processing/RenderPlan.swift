import Foundation
import WebImage
import WebImageCoders

/// Everything one render needs, decided once per request before any pixel work: what to make
/// (``ImageProxy/RenderRequest``), how to decode the source, the result's geometry and the memory
/// to reserve. ``ImageProxy/plan(_:header:)`` builds it and checks the limits first (422 before
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

extension ImageProxy {
    /// Plans one render of `header`'s source: the geometry (counted in ``ProxyMetrics``), the
    /// result limits, the decode and the memory budget, in that order.
    /// - Throws: ``ProxyError`` 422 `limitExceeded` when the result or its memory is over a limit.
    func plan(_ request: RenderRequest, header: ImageHeader) throws(ProxyError) -> RenderPlan {
        let geometries = RenderPlan.geometries(
            for: header.size,
            orientation: header.orientation,
            options: request.options
        )
        metrics.computedGeometry(count: geometries.count)
        for planned in geometries { try Self.checkResultSize(planned.geometry.padded, configuration: configuration) }
        let decoding = Self.decodingOptions(
            header: header,
            request: request,
            geometries: geometries,
            configuration: configuration
        )
        var plan = RenderPlan(
            request: request,
            decoding: decoding,
            decodedSize: header.decodedFrameSize(with: decoding),
            sourceSize: header.size,
            geometries: geometries,
            memory: 0
        )
        plan.memory = try Self.plannedMemory(plan, header: header, configuration: configuration)
        return plan
    }

    /// Decoding for one request: first frame only unless the result can animate, the limits,
    /// and shrink on load down to what the planned resize needs.
    static func decodingOptions(
        header: ImageHeader,
        request: RenderRequest,
        geometries: [RenderPlan.OrientedGeometry],
        configuration: ImageProxyConfiguration
    ) -> ImageDecodingOptions {
        let options = request.options
        let animatable: Set<ImageFormat> = [.gif, .webp, .png, .avif]
        var decoding = ImageDecodingOptions(
            firstFrameOnly: !animatable.contains(request.choice.format),
            maxPixelCount: Int(configuration.limits.maxSourceResolution * 1_000_000),
            maxFrameCount: max(configuration.limits.maxAnimationFrames, header.frameCount)
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
    static func shrinkOnLoadMinimum(storedSize: PixelSize, geometries: [RenderPlan.OrientedGeometry]) -> PixelSize? {
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
}
