import Foundation

/// Writes an animation a frame at a time, so a long or large animation is never held whole:
/// animated WebP (libwebp's `WebPAnimEncoder`), GIF (each frame quantised to its own palette
/// as it is added), APNG (each frame compressed by libpng as it is added) or an AVIF image sequence (libavif's encoder; its AV1 state is large: about
/// 120–240 bytes a pixel of the canvas with aom, against 4 for one RGBA frame).
///
/// ```swift
/// let encoder = try AnimationEncoder(format: .webp, canvasSize: size, frameCount: 48, loopCount: 0)
/// for index in 0..<48 { try encoder.add(try animation.frame(at: index)) }
/// let data = try encoder.finish()
/// ```
///
/// Frames are written as they are (sRGB; no profile is embedded). Not thread-safe: one owner
/// adds the frames in order, then calls ``finish()`` once. ``ImageEncodingOptions/maxEncodeDuration``
/// and the cancellation bound the whole encode, checked at every frame.
public final class AnimationEncoder {
    private enum Writer {
        case webp(WebPAnimationWriter)
        case gif(GIFAnimationWriter)
        case avif(AVIFAnimationWriter)
        case png(APNGEncoder)
    }

    /// The formats it writes: WebP, GIF, APNG (`.png`) and AVIF.
    public static let formats: Set<ImageFormat> = [.webp, .gif, .png, .avif]

    private let writer: Writer
    private var finished = false

    /// An encoder of `frameCount` frames of `canvasSize` that play `loopCount` times (0: forever).
    /// GIF writes the loop extension only for more than one frame; AVIF (libavif 0.11) writes
    /// none, and plays forever; APNG declares `frameCount`, and exactly that many must be added.
    /// - Throws: ``CoderError/encodingFailed(_:_:)`` for a format other than WebP, GIF, PNG or
    ///   AVIF, or a canvas the format cannot hold.
    public init(
        format: ImageFormat,
        canvasSize: PixelSize,
        frameCount: Int,
        loopCount: Int,
        options: ImageEncodingOptions = ImageEncodingOptions()
    ) throws(CoderError) {
        switch format {
        case .webp:
            writer = .webp(try WebPAnimationWriter(size: canvasSize, loopCount: loopCount, options: options))
        case .gif:
            writer = .gif(
                try GIFAnimationWriter(size: canvasSize, frameCount: frameCount, loopCount: loopCount, options: options)
            )
        case .avif:
            writer = .avif(try AVIFAnimationWriter(size: canvasSize, options: options))
        case .png:
            writer = .png(
                PNGCoder().animationWriter(
                    size: canvasSize,
                    frameCount: frameCount,
                    loopCount: loopCount,
                    options: options
                )
            )
        default:
            throw .encodingFailed(format, "frame by frame encoding writes WebP, GIF, PNG and AVIF")
        }
    }

    /// Adds the next frame (its bitmap the canvas size, its duration in seconds).
    /// - Throws: `encodingFailed` for a frame of another size, or after ``finish()``;
    ///   `limitExceeded` when the time limit passed or the cancellation was raised.
    public func add(_ frame: DecodedImage.Frame) throws(CoderError) {
        guard !finished else { throw .encodingFailed(format, "a frame was added after finish()") }
        switch writer {
        case .webp(let webp): try webp.add(frame)
        case .gif(let gif): try gif.add(frame)
        case .avif(let avif): try avif.add(frame)
        case .png(let png): try png.add(frame)
        }
    }

    /// The encoded file.
    /// - Throws: `encodingFailed` when called twice or when the library cannot assemble it.
    public func finish() throws(CoderError) -> Data {
        guard !finished else { throw .encodingFailed(format, "finish() was called twice") }
        finished = true
        switch writer {
        case .webp(let webp): return try webp.finish()
        case .gif(let gif): return try gif.finish()
        case .avif(let avif): return try avif.finish()
        case .png(let png): return try png.finish()
        }
    }

    private var format: ImageFormat {
        switch writer {
        case .webp: .webp
        case .gif: .gif
        case .avif: .avif
        case .png: .png
        }
    }
}

extension AnimatedImage {
    /// Decodes, transforms and encodes the animation a frame at a time: frame *n* is decoded,
    /// given to `transform` (a resize, a crop: any work on one frame; every result must have the
    /// same size) and added to the encoder before frame *n* + 1 is decoded. What is held at
    /// once is one frame's canvases, one result frame and the encoder's state, whatever the
    /// frame count. Keeps each frame's duration and the loop count.
    ///
    /// Runs on the calling thread (C decoding and encoding: call it from a work queue).
    /// - Parameters:
    ///   - format: `.webp`, `.gif`, `.png` or `.avif`.
    ///   - options: quality, time limit and cancellation of the whole encode.
    ///   - frameLimit: encode at most this many frames (the first ones); `nil`: all.
    ///   - transform: the work on each decoded frame; default: none.
    /// - Throws: the decode's, the transform's and the encoder's ``CoderError``s.
    public func encode(
        as format: ImageFormat,
        options: ImageEncodingOptions = ImageEncodingOptions(),
        frameLimit: Int? = nil,
        transform: (DecodedImage.Frame) throws(CoderError) -> DecodedImage.Frame = { $0 }
    ) throws(CoderError) -> Data {
        let count = min(frameCount, max(1, frameLimit ?? frameCount))
        var encoder: AnimationEncoder?
        for index in 0..<count {
            let frame = try transform(try frame(at: index))
            if encoder == nil {
                encoder = try AnimationEncoder(
                    format: format,
                    canvasSize: PixelSize(width: frame.bitmap.width, height: frame.bitmap.height),
                    frameCount: count,
                    loopCount: loopCount,
                    options: options
                )
            }
            try encoder?.add(frame)
        }
        guard let encoder else { throw .encodingFailed(format, "the animation has no frame") }
        return try encoder.finish()
    }
}

extension DecodedImage.Frame {
    /// The rule every animation writer keeps: frame `number` (from 1) must be `size`.
    /// - Throws: ``CoderError/encodingFailed(_:_:)`` naming both sizes.
    func checkSize(_ size: PixelSize, number: Int, format: ImageFormat) throws(CoderError) {
        guard bitmap.width == size.width, bitmap.height == size.height else {
            throw .encodingFailed(
                format,
                "frame \(number) is \(bitmap.width)×\(bitmap.height), not the animation's \(size)"
            )
        }
    }
}
