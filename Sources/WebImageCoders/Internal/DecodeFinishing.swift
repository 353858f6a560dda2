extension DecodedImage {
    /// Applies the options' target size and orientation to freshly decoded frames: the common
    /// last step of every decoder. The decode's `deadline` covers this step too: it is checked
    /// before each frame is resized or turned.
    /// Colour comes first: the embedded profile's policy is applied at the decoded size, before
    /// any resize.
    /// Consuming: a decoder's only copy is converted in place, not copied first.
    consuming func finished(
        with options: ImageDecodingOptions,
        deadline: CodingDeadline
    ) throws(CoderError)
        -> DecodedImage
    {
        var image = consume self
        try image.applyColorPolicy(options.colorPolicy, deadline: deadline)
        let target = options.targetSize(forSource: image.sourceSize, orientation: image.orientation)
        let resizes = target.width < image.width || target.height < image.height
        let orientation = image.orientation
        let turns = options.applyOrientation && orientation != .up
        guard resizes || turns else { return image }
        for index in image.frames.indices {
            try deadline.check(image.format)
            if resizes { image.frames[index].bitmap = image.frames[index].bitmap.resized(to: target) }
            if turns { image.frames[index].bitmap = image.frames[index].bitmap.applyingOrientation(orientation) }
        }
        if turns { image.orientation = .up }
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

/// A decode's time budget (``ImageDecodingOptions/maxDecodeDuration``), counted from its start;
/// also an encode's (``ImageEncodingOptions/maxEncodeDuration``).
/// A cancellation, when the options carry one, stops it too.
struct CodingDeadline {
    private let start = ContinuousClock.now
    private let limit: Duration?
    let cancellation: CodingCancellation?

    init(_ options: ImageDecodingOptions) {
        limit = options.maxDecodeDuration
        cancellation = options.cancellation
    }

    init(_ options: ImageEncodingOptions) {
        limit = options.maxEncodeDuration
        cancellation = options.cancellation
    }

    /// Whether the work must stop now: cancelled, or out of time.
    var isOver: Bool {
        if cancellation?.isCancelled == true { return true }
        guard let limit else { return false }
        return ContinuousClock.now - start > limit
    }

    /// Nanoseconds left, for the C decoders: 0 for no limit, otherwise at least 1.
    var remainingNanoseconds: Int64 {
        guard let limit else { return 0 }
        let (seconds, attoseconds) = (limit - (ContinuousClock.now - start)).components
        guard seconds < Int64.max / 1_000_000_000 else { return Int64.max }
        return max(1, seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }

    /// Throws when the budget is spent; `work` names what was being done ("decoding").
    func check(_ format: ImageFormat, _ work: String = "decoding") throws(CoderError) {
        if cancellation?.isCancelled == true { throw .limitExceeded(format, "\(work) was stopped") }
        guard let limit, ContinuousClock.now - start > limit else { return }
        throw .limitExceeded(format, "\(work) took longer than the \(limit) limit")
    }
}
