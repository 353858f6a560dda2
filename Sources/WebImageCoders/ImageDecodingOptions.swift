/// How to decode: size limits, thumbnails, frames and orientation.
///
/// The defaults decode every frame at full size, leave orientation as stored, reject images over
/// 100 megapixels before allocating anything, and give up on a decode after 10 seconds.
public struct ImageDecodingOptions: Sendable, Hashable {
    /// Decode to fit inside this box, keeping the aspect ratio; never upscales. JPEG uses libjpeg's
    /// DCT scaling so the full-size bitmap is never allocated. `nil` (default): full size.
    public var thumbnailPixelSize: PixelSize?
    /// Scale down so one frame's pixels take at most this many bytes (SDWebImage's
    /// `scaleDownLargeImages` limit). `nil` (default): no limit.
    public var scaleDownLimitBytes: Int?
    /// Decode only the first frame of an animation. Default `false`.
    public var firstFrameOnly: Bool
    /// Decode an animation's frames when they are asked for, not all at once: the decode gives
    /// the first frame with the ``AnimatedImage`` the others come from
    /// (``DecodedImage/animation``), and holds one frame's canvases while it runs. GIF, APNG,
    /// animated WebP and AVIF sequences; still images and other formats decode as usual, and
    /// ``firstFrameOnly`` wins. Default `false`: every frame is decoded.
    public var framesOnDemand = false
    /// Reject images whose declared canvas (or any frame) has more pixels than this, before
    /// allocating. Default 100,000,000.
    public var maxPixelCount: Int
    /// Reject animations with more frames than this. Default 10,000.
    public var maxFrameCount: Int
    /// Reject animations whose composed frames together would take more bytes than this (every
    /// frame is held decoded). Default 512 MiB: 1080p × 60 frames passes; a 4096² × 15-frame
    /// bomb of a few hundred bytes (1 GB decoded) is refused before any pixel is allocated.
    public var maxAnimationBytes: Int
    /// Give up on a decode that takes longer than this (``CoderError/limitExceeded(_:_:)``):
    /// checked every few rows of JPEG images, every 256 KiB of PNG rows, between animation frames
    /// and before each frame is resized or turned (a still WebP or GIF frame is bounded by
    /// ``maxPixelCount`` instead). JPEG also stops past 1,000 scans. Progressive previews get the
    /// budget each. `nil`: no time limit. Default 10 seconds.
    public var maxDecodeDuration: Duration?
    /// Stops the decode at its next check when cancelled (it then throws `limitExceeded`).
    /// Default `nil`.
    public var cancellation: CodingCancellation?
    /// What to do with an embedded ICC profile: convert to sRGB (the default), keep it on
    /// ``DecodedImage/colorProfile`` with the pixels untouched, or ignore it.
    public var colorPolicy: ColorPolicy = .convertToSRGB
    /// Carry the source's EXIF block on ``DecodedImage/exif`` (for encoders to write back).
    /// Default `false`: EXIF is read for the orientation only.
    public var keepsMetadata = false
    /// Decode the image's first embedded thumbnail instead of the image when it has one (HEIF and
    /// AVIF; imgproxy's `enforce_thumbnail`): the result's ``DecodedImage/sourceSize`` is the
    /// thumbnail's. Default `false`: a HEIF thumbnail is used only when it covers
    /// ``thumbnailPixelSize``.
    public var prefersEmbeddedThumbnail = false
    /// Turn the pixels upright according to EXIF orientation (the result reports `.up`).
    /// Default `false`: pixels stay as stored and ``DecodedImage/orientation`` says how to show them.
    public var applyOrientation: Bool
    /// Shrink on load: decoders with a built-in reduction (JPEG's DCT scaling by N/8)
    /// use the strongest one that keeps both sides at least this big (as stored), and nothing
    /// is resized afterwards, so the caller resizes once from a smaller bitmap.
    /// ``DecodedImage/sourceSize`` still gives the full size. Other formats decode at full size.
    /// `nil` (default): no reduction beyond the thumbnail box.
    public var shrinkOnLoadMinimumSize: PixelSize?

    // shape: public memberwise init: each parameter is a documented option with a default
    public init(
        thumbnailPixelSize: PixelSize? = nil,
        scaleDownLimitBytes: Int? = nil,
        firstFrameOnly: Bool = false,
        maxPixelCount: Int = 100_000_000,
        maxFrameCount: Int = 10_000,
        maxAnimationBytes: Int = 512 << 20,
        maxDecodeDuration: Duration? = .seconds(10),
        applyOrientation: Bool = false,
        colorPolicy: ColorPolicy = .convertToSRGB
    ) {
        self.maxDecodeDuration = maxDecodeDuration
        self.colorPolicy = colorPolicy
        self.thumbnailPixelSize = thumbnailPixelSize
        self.scaleDownLimitBytes = scaleDownLimitBytes
        self.firstFrameOnly = firstFrameOnly
        self.maxPixelCount = maxPixelCount
        self.maxFrameCount = maxFrameCount
        self.maxAnimationBytes = maxAnimationBytes
        self.applyOrientation = applyOrientation
        self.shrinkOnLoadMinimumSize = nil
    }

    /// The size a decoder with built-in reductions must still cover: the delivered size, or the
    /// shrink-on-load minimum when nothing else makes the image smaller (and both when both do).
    func reductionFloor(forSource source: PixelSize, orientation: ImageOrientation) -> PixelSize {
        let target = targetSize(forSource: source, orientation: orientation)
        guard let minimum = shrinkOnLoadMinimumSize else { return target }
        if target == source { return minimum }
        return PixelSize(width: max(target.width, minimum.width), height: max(target.height, minimum.height))
    }

    /// The size a `width` × `height` source should be delivered at (stored orientation), given
    /// the thumbnail box and the scale-down limit. Equal to the source when neither applies.
    public func targetSize(forSource source: PixelSize, orientation: ImageOrientation = .up) -> PixelSize {
        var scale = 1.0
        if var box = thumbnailPixelSize, box.width > 0, box.height > 0 {
            // The box applies to the image as displayed.
            if orientation.swapsDimensions { box = PixelSize(width: box.height, height: box.width) }
            scale = min(scale, Double(box.width) / Double(source.width), Double(box.height) / Double(source.height))
        }
        let sourceBytes = Double(source.width) * Double(source.height) * 4
        if let limit = scaleDownLimitBytes, limit > 0, sourceBytes > Double(limit) {
            scale = min(scale, (Double(limit) / sourceBytes).squareRoot())
        }
        guard scale < 1 else { return source }
        return PixelSize(
            width: max(1, Int((Double(source.width) * scale).rounded())),
            height: max(1, Int((Double(source.height) * scale).rounded()))
        )
    }
}
