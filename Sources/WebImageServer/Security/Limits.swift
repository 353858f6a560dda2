import Foundation
import WebImageCoders

/// What one request may cost the proxy, with imgproxy's defaults: the one place these limits and
/// their defaults live. ``ImageProxyConfiguration/limits`` holds the server's; `webimage serve`
/// starts its flags, environment variables and config keys from ``defaults``.
public struct ProxyLimits: Sendable, Equatable {
    /// The largest source in bytes (by `Content-Length`, then while streaming). Default 32 MiB
    /// (`IMGPROXY_MAX_SRC_FILE_SIZE`).
    public var maxSourceFileSize: Int64 = 33_554_432
    /// The most source pixels, in megapixels, animation frames summed (unless
    /// ``maxAnimationFrameResolution`` is set). Default 50 (`IMGPROXY_MAX_SRC_RESOLUTION`).
    public var maxSourceResolution: Double = 50
    /// The most pixels one frame of an animated source may have, in megapixels. Above 0, an
    /// animation is checked a frame at a time against it instead of its frames summed against
    /// ``maxSourceResolution``, as imgproxy does: animations are rendered a frame at a time, so
    /// their length costs time (bounded by ``processingTimeout``), not memory. Default 0, off
    /// (`IMGPROXY_MAX_ANIMATION_FRAME_RESOLUTION`).
    public var maxAnimationFrameResolution: Double = 0
    /// The longest side a result may have. Default 8192 (`IMGPROXY_MAX_RESULT_DIMENSION`).
    public var maxResultDimension = 8192
    /// The most pixels a result may have, in megapixels (each frame of an animation). A request
    /// planning more is refused with 422 before its source is decoded. Default 50.
    public var maxResultResolution: Double = 50
    /// The most frames an animated result keeps. Default 256 (`IMGPROXY_MAX_ANIMATION_FRAMES`).
    public var maxAnimationFrames = 256
    /// Time allowed for fetching a source. Default 5 s (`IMGPROXY_DOWNLOAD_TIMEOUT`).
    public var downloadTimeout: Duration = .seconds(5)
    /// Time allowed for decoding, processing and encoding. Default 10 s.
    public var processingTimeout: Duration = .seconds(10)
    /// Redirects followed per source, each checked against the source rules. Default 5
    /// (`IMGPROXY_MAX_REDIRECTS`).
    public var maxRedirects = 5

    /// imgproxy's defaults.
    public init() {}

    /// imgproxy's defaults, for a command line's help and for settings left unset.
    public static let defaults = ProxyLimits()
}

extension ProxyLimits {
    /// Why a source of `header`'s size is refused before it is decoded, or `nil` when it is
    /// within ``maxSourceResolution`` (frames summed) or, for an animation with
    /// ``maxAnimationFrameResolution`` set, within that per frame.
    func resolutionRefusal(of header: ImageHeader) -> String? {
        let framePixels = Double(header.size.width) * Double(header.size.height)
        let frames = max(1, header.frameCount)
        if frames > 1 && maxAnimationFrameResolution > 0 {
            guard framePixels > maxAnimationFrameResolution * 1_000_000 else { return nil }
            return "each frame of the source has \(Self.megapixels(framePixels)) megapixels, over the frame limit of "
                + "\(maxAnimationFrameResolution) (--max-animation-frame-resolution)"
        }
        let pixels = framePixels * Double(frames)
        guard pixels > maxSourceResolution * 1_000_000 else { return nil }
        let counted = frames > 1 ? " (\(frames) frames summed)" : ""
        return "the source has \(Self.megapixels(pixels)) megapixels\(counted), over the limit of "
            + "\(maxSourceResolution) (--max-src-resolution)"
    }

    private static func megapixels(_ pixels: Double) -> String { String(format: "%.1f", pixels / 1_000_000) }

    /// ``maxSourceResolution`` in pixels, saturating (a limit of 10³⁰ megapixels is no limit).
    var maxSourcePixels: Int { Self.pixels(megapixels: maxSourceResolution) }
    /// ``maxResultResolution`` in pixels, saturating.
    var maxResultPixels: Int { Self.pixels(megapixels: maxResultResolution) }

    /// `megapixels` as a pixel count: `Int.max` when it is too many for an `Int` (or infinite),
    /// 0 when it is not above 0 (or not a number).
    static func pixels(megapixels: Double) -> Int { Int(saturating: megapixels * 1_000_000, in: 0...Int.max) }
}

/// The limits under their old names, kept for source compatibility: read and set them on
/// ``ImageProxyConfiguration/limits``.
extension ImageProxyConfiguration {
    /// ``ProxyLimits/maxSourceFileSize``.
    @available(*, deprecated, renamed: "limits.maxSourceFileSize")
    public var maxSourceFileSize: Int64 {
        get { limits.maxSourceFileSize }
        set { limits.maxSourceFileSize = newValue }
    }
    /// ``ProxyLimits/maxSourceResolution``.
    @available(*, deprecated, renamed: "limits.maxSourceResolution")
    public var maxSourceResolution: Double {
        get { limits.maxSourceResolution }
        set { limits.maxSourceResolution = newValue }
    }
    /// ``ProxyLimits/maxResultDimension``.
    @available(*, deprecated, renamed: "limits.maxResultDimension")
    public var maxResultDimension: Int {
        get { limits.maxResultDimension }
        set { limits.maxResultDimension = newValue }
    }
    /// ``ProxyLimits/maxResultResolution``.
    @available(*, deprecated, renamed: "limits.maxResultResolution")
    public var maxResultResolution: Double {
        get { limits.maxResultResolution }
        set { limits.maxResultResolution = newValue }
    }
    /// ``ProxyLimits/maxAnimationFrames``.
    @available(*, deprecated, renamed: "limits.maxAnimationFrames")
    public var maxAnimationFrames: Int {
        get { limits.maxAnimationFrames }
        set { limits.maxAnimationFrames = newValue }
    }
    /// ``ProxyLimits/downloadTimeout``.
    @available(*, deprecated, renamed: "limits.downloadTimeout")
    public var downloadTimeout: Duration {
        get { limits.downloadTimeout }
        set { limits.downloadTimeout = newValue }
    }
    /// ``ProxyLimits/processingTimeout``.
    @available(*, deprecated, renamed: "limits.processingTimeout")
    public var processingTimeout: Duration {
        get { limits.processingTimeout }
        set { limits.processingTimeout = newValue }
    }
    /// ``ProxyLimits/maxRedirects``.
    @available(*, deprecated, renamed: "limits.maxRedirects")
    public var maxRedirects: Int {
        get { limits.maxRedirects }
        set { limits.maxRedirects = newValue }
    }
}
