/// Decodes an animation's composed canvases in order, keeping only what the next frame needs
/// (the canvas and the codec's state): the frame source behind ``AnimatedImage``.
///
/// Not thread-safe: one owner at a time (``AnimatedImage`` keeps it behind its lock).
protocol AnimationFrameDecoder: AnyObject {
    /// The index of the frame ``nextCanvas(within:)`` returns.
    var position: Int { get }

    /// The colour profile the frames are in, when the codec reads it with the frames (APNG's
    /// iCCP chunk); `nil` otherwise.
    var colorProfile: ColorProfile? { get }

    /// The next frame's composed canvas as the codec gives it (before colour conversion,
    /// resizing and orientation); `nil` after the last frame. A codec that checks a deadline
    /// inside one frame's decode checks `deadline`.
    func nextCanvas(within deadline: CodingDeadline) throws(CoderError) -> Bitmap?

    /// Goes back to the first frame.
    func rewind() throws(CoderError)

    /// Makes frame `index` the next one without decoding those between, when the codec can jump
    /// (AVIF, from its nearest key frame); `false` when frames must be composed in order.
    func skip(to index: Int) -> Bool
}

extension AnimationFrameDecoder {
    var colorProfile: ColorProfile? { nil }

    func skip(to index: Int) -> Bool { false }
}
