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
