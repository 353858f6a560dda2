extension DecodedImage {
    /// Applies the options' target size and orientation to freshly decoded frames: the common
    /// last step of every decoder.
    func finished(with options: ImageDecodingOptions) -> DecodedImage {
        var image = self
        let target = options.targetSize(forSource: sourceSize, orientation: orientation)
        if target.width < width || target.height < height {
            image.frames = frames.map { frame in
                DecodedImage.Frame(bitmap: frame.bitmap.resized(to: target), duration: frame.duration)
            }
        }
        if options.applyOrientation, orientation != .up {
            image.frames = image.frames.map { frame in
                DecodedImage.Frame(bitmap: frame.bitmap.applyingOrientation(orientation), duration: frame.duration)
            }
            image.orientation = .up
        }
        return image
    }
}

extension ImageDecodingOptions {
    /// Throws when `size` is over the pixel limit.
    func checkPixelLimit(_ size: PixelSize, format: ImageFormat) throws(CoderError) {
        guard size.width > 0, size.height > 0 else {
            throw .corruptData(format, "invalid dimensions \(size.width)×\(size.height)")
        }
        guard size.width <= Int(Int32.max) / size.height, size.pixelCount <= maxPixelCount else {
            throw .limitExceeded(
                format,
                "\(size.width)×\(size.height) is over the \(maxPixelCount)-pixel limit"
            )
        }
    }

    /// Throws when an animation's frame count or composed memory is over the limits.
    func checkAnimationLimits(frameCount: Int, canvas: PixelSize, format: ImageFormat) throws(CoderError) {
        guard frameCount <= maxFrameCount else {
            throw .limitExceeded(format, "\(frameCount) frames is over the \(maxFrameCount)-frame limit")
        }
        let bytes = frameCount.multipliedReportingOverflow(by: canvas.pixelCount * 4)
        guard !bytes.overflow, bytes.partialValue <= maxAnimationBytes else {
            throw .limitExceeded(
                format,
                "\(frameCount) frames of \(canvas) exceed the \(maxAnimationBytes)-byte animation limit"
            )
        }
    }
}

/// A decode's time budget (``ImageDecodingOptions/maxDecodeDuration``), counted from its start.
struct DecodeDeadline {
    private let start = ContinuousClock.now
    private let limit: Duration?

    init(_ options: ImageDecodingOptions) { limit = options.maxDecodeDuration }

    /// Nanoseconds left, for the C decoders: 0 for no limit, otherwise at least 1.
    var remainingNanoseconds: Int64 {
        guard let limit else { return 0 }
        let (seconds, attoseconds) = (limit - (ContinuousClock.now - start)).components
        guard seconds < Int64.max / 1_000_000_000 else { return Int64.max }
        return max(1, seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }

    /// Throws when the budget is spent.
    func check(_ format: ImageFormat) throws(CoderError) {
        guard let limit, ContinuousClock.now - start > limit else { return }
        throw .limitExceeded(format, "decoding took longer than the \(limit) limit")
    }
}
