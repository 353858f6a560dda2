/// Decodes an animation's composed canvases in order, keeping only what the next frame needs
/// (the canvas and the codec's state): the frame source behind ``AnimatedImage``.
///
/// Not thread-safe: one owner at a time (``AnimatedImage`` keeps it behind its lock).
protocol AnimationFrameDecoder: AnyObject {
    /// The index of the frame ``nextCanvas()`` returns.
    var position: Int { get }

    /// The next frame's composed canvas as the codec gives it (before colour conversion,
    /// resizing and orientation); `nil` after the last frame.
    func nextCanvas() throws(CoderError) -> Bitmap?

    /// Goes back to the first frame.
    func rewind() throws(CoderError)
}
