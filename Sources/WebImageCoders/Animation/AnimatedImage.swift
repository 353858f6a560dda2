import Foundation
import Synchronization

/// An animation decoded a frame at a time, on demand: what SDWebImage's `SDAnimatedImage` and
/// Kingfisher's frame sources are. The facts (``info``: frame count, durations, loop count,
/// canvas) come from the headers before any pixel is decoded; ``frame(at:)`` decodes one frame,
/// holding one composed canvas and the codec's state, never the whole animation.
///
/// ```swift
/// let animation = try AnimatedImage(data: gif, options: ImageDecodingOptions(thumbnailPixelSize: .init(width: 256, height: 256)))
/// for index in 0..<animation.frameCount {
///     let frame = try animation.frame(at: index)   // 256-pixel frame, its duration
/// }
/// ```
///
/// Frames come out as ``DecodedImage/frames`` of a whole decode with the same options would
/// hold them: colour converted by ``ImageDecodingOptions/colorPolicy``, reduced to the
/// thumbnail size or scale-down limit, turned by the EXIF orientation when
/// ``ImageDecodingOptions/applyOrientation`` asks for it. Frames asked in order cost one
/// frame's work each; asking for an earlier frame decodes again from the first.
///
/// GIF, APNG, animated WebP and AVIF image sequences (whose frames are reached from the nearest
/// key frame, not the first). Thread-safe: frames decode one at a time under the image's lock, on
/// the calling thread (a C decode: call it from a work queue, not the Swift cooperative pool).
/// ``ImageDecodingOptions/maxDecodeDuration`` and the cancellation bound each call.
public final class AnimatedImage: Sendable {
    /// The animation's facts, read when the image was made.
    public let info: AnimationInfo
    /// The decode settings every frame is made with.
    public let options: ImageDecodingOptions
    /// The encoded animation.
    public let data: Data
    private let colorProfile: ColorProfile?
    /// The frame decoder kept between calls. A `Mutex` (not `Protected`, which needs a `Sendable`
    /// value): the decoder is not thread-safe, and the mutex's `sending` rules keep it inside.
    private let cursor = Mutex<(any AnimationFrameDecoder)?>(nil)

    /// Reads the animation's headers; no frame is decoded.
    /// - Throws: ``CoderError/unsupportedFormat(_:)`` for data that is not a GIF, an APNG, an
    ///   animated WebP or an AVIF (a still one is one frame); `corruptData` or `truncatedData` when the headers cannot be read; `limitExceeded`
    ///   when the canvas is over ``ImageDecodingOptions/maxPixelCount``, the frames over
    ///   ``ImageDecodingOptions/maxFrameCount``, or the memory one frame needs (the codec's
    ///   canvas, the composed frame and the delivered one) over
    ///   ``ImageDecodingOptions/maxAnimationBytes``.
    public init(data: Data, options: ImageDecodingOptions = ImageDecodingOptions()) throws(CoderError) {
        guard !data.isEmpty else { throw .emptyData }
        let details = ImageFormatDetails(sniffing: data)
        switch details.format {
        case .gif:
            info = try GIFFrameDecoder.info(of: data, options: options)
            colorProfile = nil
        case .webp where details.isAnimated:
            info = try WebPFrameDecoder.info(of: data, options: options)
            colorProfile = options.colorPolicy == .ignore ? nil : WebPCoder.embeddedProfile(in: data)
        case .png where details.isAnimated:
            info = try APNGFrameDecoder.info(of: data, options: options)
            colorProfile = nil  // read by libpng with the first frame (the decoder's)
        case .avif:
            // Any AVIF: libavif reads a sequence's track even when the major brand is generic
            // (`mif1`), which the sniffer does not call animated; a still one is one frame.
            info = try AVIFFrameDecoder.info(of: data, options: options)
            colorProfile = nil  // the decoder's, with the first frame (an AV1 stream may carry it)
        default:
            throw .unsupportedFormat(details.format)
        }
        guard info.frameCount <= options.maxFrameCount else {
            throw .limitExceeded(
                info.format,
                "\(info.frameCount) frames is over the \(options.maxFrameCount)-frame limit"
            )
        }
        try options.checkAnimationLimits(
            frameCount: Self.framesHeld(for: info.format),
            canvas: info.canvasSize,
            format: info.format
        )
        self.data = data
        self.options = options
    }

    /// Canvases one frame's decode holds at its peak: the codec's (and its previous one, for
    /// disposal), the composed copy, the delivered frame. AVIF's is ``framesHeld(for:)``.
    public static let framesHeldAtOnce = 3

    /// Canvases (RGBA at the canvas size) one frame's decode of `format` holds at its peak: AVIF
    /// adds the AV1 decoder's reference frames and pictures (a 1024² sequence's thumbnail peaked
    /// 20 MB above the same GIF's: five canvases more); the others ``framesHeldAtOnce``.
    public static func framesHeld(for format: ImageFormat) -> Int { format == .avif ? 8 : framesHeldAtOnce }

    /// The bytes one frame's decode of a `format` animation with a `canvas` of that size holds at
    /// its peak: ``framesHeld(for:)`` RGBA canvases.
    public static func bytesPerFrame(of format: ImageFormat, canvas: PixelSize) -> Int {
        framesHeld(for: format) * canvas.pixelCount * 4
    }

    /// The formats whose animations this type reads a frame at a time: GIF, APNG (`.png`), WebP
    /// and AVIF image sequences.
    public static let formats: Set<ImageFormat> = [.gif, .png, .webp, .avif]

    /// Whether `data` is an animation this type decodes: a GIF, an APNG, an animated WebP or an
    /// AVIF image sequence.
    public static func canDecode(_ data: Data) -> Bool {
        let details = ImageFormatDetails(sniffing: data)
        return details.format == .gif || (formats.contains(details.format) && details.isAnimated)
    }

    /// The frames the animation holds.
    public var frameCount: Int { info.frameCount }

    /// How many times it plays; 0 means forever.
    public var loopCount: Int { info.loopCount }

    /// How long frame `index` shows, in seconds.
    public func duration(at index: Int) -> TimeInterval { info.durations[index] }

    /// The size every frame is delivered at: the canvas reduced to the options' thumbnail size or
    /// scale-down limit, turned when the orientation is applied.
    public var frameSize: PixelSize {
        let target = options.targetSize(forSource: info.canvasSize, orientation: info.orientation)
        let turns = options.applyOrientation && info.orientation.swapsDimensions
        return turns ? PixelSize(width: target.height, height: target.width) : target
    }

    /// The bytes one frame's decode holds at most (see ``init(data:options:)``).
    public var bytesPerFrame: Int { Self.bytesPerFrame(of: info.format, canvas: info.canvasSize) }

    /// The first frame: the image to show when not animating.
    public func posterFrame() throws(CoderError) -> DecodedImage.Frame { try frame(at: 0) }

    /// Frees the frame decoder kept between calls (the codec's canvases, about
    /// ``bytesPerFrame``): the image then holds its encoded bytes only, and the next
    /// ``frame(at:)`` starts again from the nearest key frame. Waits for a frame under way.
    public func discardDecoderState() { cursor.withLock { $0 = nil } }

    /// Frame `index`, composed and finished by ``options``.
    /// - Throws: `corruptData` for an index outside `0..<frameCount` or a frame that does not
    ///   decode, `truncatedData` when the data ends before it, `limitExceeded` when the decode
    ///   ran past ``ImageDecodingOptions/maxDecodeDuration`` or was cancelled.
    public func frame(at index: Int) throws(CoderError) -> DecodedImage.Frame {
        try finishedFrame(at: index, deadline: CodingDeadline(options)).frames[0]
    }

    /// Frame `index` as a one-frame image, finished within `deadline` (its colour profile as
    /// the options leave it).
    func finishedFrame(at index: Int, deadline: CodingDeadline) throws(CoderError) -> DecodedImage {
        guard info.durations.indices.contains(index) else {
            throw .corruptData(info.format, "frame \(index) asked of an animation of \(frameCount)")
        }
        let (canvas, decoderProfile) = try cursor.withLock { (cursor) throws(CoderError) -> (Bitmap, ColorProfile?) in
            do throws(CoderError) {
                if cursor == nil { cursor = try makeDecoder() }
                let canvas = try Self.canvas(at: index, from: cursor!, deadline: deadline, format: info.format)
                return (canvas, cursor!.colorProfile)
            } catch {
                cursor = nil  // a decoder that failed part-way starts again next time
                throw error
            }
        }
        var bitmap = canvas
        bitmap.hasAlpha = info.mayHaveAlpha || canvas.containsTransparency
        let image = DecodedImage(
            frames: [DecodedImage.Frame(bitmap: bitmap, duration: info.durations[index])],
            loopCount: info.loopCount,
            format: info.format,
            orientation: info.orientation,
            sourceSize: info.canvasSize,
            sourceFrameCount: info.frameCount,
            colorProfile: colorProfile ?? decoderProfile
        )
        return try image.finished(with: options, deadline: deadline)
    }

    private func makeDecoder() throws(CoderError) -> any AnimationFrameDecoder {
        switch info.format {
        case .gif: try GIFFrameDecoder(data: data, options: options)
        case .png: try APNGFrameDecoder(data: data, options: options)
        case .avif: try AVIFFrameDecoder(data: data, options: options)
        default: try WebPFrameDecoder(data: data, options: options)
        }
    }

    /// Moves `decoder` to frame `index` (by a jump when the codec can, else from the first frame
    /// when it is past it) and decodes it.
    private static func canvas(
        at index: Int,
        from decoder: any AnimationFrameDecoder,
        deadline: CodingDeadline,
        format: ImageFormat
    ) throws(CoderError) -> Bitmap {
        if decoder.position != index, !decoder.skip(to: index), decoder.position > index { try decoder.rewind() }
        while true {
            try deadline.check(format)
            let position = decoder.position
            guard let canvas = try decoder.nextCanvas(within: deadline) else {
                throw .truncatedData(format, "the data ends after frame \(position) of the \(index + 1) asked for")
            }
            if position == index { return canvas }
        }
    }
}

extension AnimatedImage {
    /// The whole animation, each frame finished by ``options`` and then passed to `transform` as
    /// a one-frame image before the next frame is decoded: only the transformed frames and one
    /// frame's canvases (``bytesPerFrame``) are held at once, never every source canvas. Frame
    /// durations, the loop count and the facts of the source carry over; every frame has alpha
    /// when one has. `transform` runs on the calling thread, outside the image's lock.
    ///
    /// - Returns: the animation, or `nil` when `transform` gave no image for a frame (the work
    ///   stops there).
    /// - Throws: what ``frame(at:)`` throws; `limitExceeded` when the first transformed frame
    ///   times the frame count is over ``ImageDecodingOptions/maxAnimationBytes``, or when the
    ///   frames together ran past ``ImageDecodingOptions/maxDecodeDuration`` (checked between
    ///   frames) or the options' cancellation stopped them.
    public func decodedImage(
        transformingEachFrame transform: (DecodedImage) -> DecodedImage?
    ) throws(CoderError) -> DecodedImage? {
        let deadline = CodingDeadline(options)
        var frames: [DecodedImage.Frame] = []
        frames.reserveCapacity(frameCount)
        var last: DecodedImage?
        for index in 0..<frameCount {
            let decoded = try finishedFrame(at: index, deadline: deadline)
            guard let transformed = transform(decoded), let frame = transformed.frames.first else { return nil }
            if index == 0 {
                let size = PixelSize(width: frame.bitmap.width, height: frame.bitmap.height)
                try options.checkAnimationLimits(frameCount: frameCount, canvas: size, format: info.format)
            }
            frames.append(DecodedImage.Frame(bitmap: frame.bitmap, duration: info.durations[index]))
            last = transformed
        }
        guard var image = last else { return nil }
        let hasAlpha = frames.contains { $0.bitmap.hasAlpha }
        for index in frames.indices { frames[index].bitmap.hasAlpha = hasAlpha }
        image.frames = frames
        image.loopCount = info.loopCount
        image.sourceFrameCount = info.frameCount
        if options.keepsMetadata, info.format == .webp { image.exif = WebPCoder.exif(in: data) }
        return image
    }

    /// The decode of an animation a frame at a time, when the options allow it: its first frame
    /// and the animation the others come from, with ``ImageDecodingOptions/framesOnDemand``
    /// (see ``decodeOnDemand(_:options:)``); else, for frames that come out smaller than the
    /// canvas (a thumbnail or a scale-down), every frame reduced as soon as it is composed, so
    /// only the small frames and one canvas's work are held, never every composed canvas (the
    /// memory limit then applies to what is held). `nil` when `data` is no animation this type
    /// reads, or the options keep the full size or one frame (the one-pass decoders do those).
    static func decodeFrameByFrame(_ data: Data, options: ImageDecodingOptions) throws(CoderError) -> DecodedImage? {
        if options.framesOnDemand, let poster = try decodeOnDemand(data, options: options) { return poster }
        // Only animations whose one frame's canvases fit the limit: a still image, or one too
        // large for this path, is the one-pass decoder's to judge.
        guard !options.firstFrameOnly, canDecode(data), let header = ImageHeader(data), header.frameCount > 1,
            header.size.pixelCount <= options.maxPixelCount,
            bytesPerFrame(of: header.format, canvas: header.size) <= options.maxAnimationBytes
        else { return nil }
        let animation = try AnimatedImage(data: data, options: options)
        let target = options.targetSize(forSource: animation.info.canvasSize, orientation: animation.info.orientation)
        guard animation.frameCount > 1, target.pixelCount < animation.info.canvasSize.pixelCount else { return nil }
        try options.checkAnimationLimits(
            frameCount: animation.frameCount,
            canvas: target,
            format: animation.info.format
        )
        return try animation.decodedImage(transformingEachFrame: { $0 })
    }

    /// An animation's first frame, carrying the ``AnimatedImage`` the others come from
    /// (``DecodedImage/animation``), its decoder state freed: what is held afterwards is the
    /// first frame and the encoded bytes. `nil` when `data` is no animation this type reads, a
    /// one-frame one, or the options ask for the first frame only. The frames come out with
    /// `options` (thumbnail, colour, orientation); its cancellation stops the first frame only.
    static func decodeOnDemand(_ data: Data, options: ImageDecodingOptions) throws(CoderError) -> DecodedImage? {
        guard !options.firstFrameOnly, canDecode(data), let header = ImageHeader(data), header.frameCount > 1 else {
            return nil
        }
        var frameOptions = options
        frameOptions.framesOnDemand = false
        frameOptions.cancellation = nil
        let animation = try AnimatedImage(data: data, options: frameOptions)
        guard animation.frameCount > 1 else { return nil }
        var poster = try animation.finishedFrame(at: 0, deadline: CodingDeadline(options))
        animation.discardDecoderState()
        poster.animation = animation
        if options.keepsMetadata, animation.info.format == .webp { poster.exif = WebPCoder.exif(in: data) }
        return poster
    }
}
