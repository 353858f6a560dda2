import Foundation

/// What an animation is, read from its headers before any pixel is decoded: the canvas, each
/// frame's duration, the loop count.
public struct AnimationInfo: Sendable, Hashable {
    /// The format of the data.
    public var format: ImageFormat
    /// The canvas every frame is composed on, as stored (before EXIF orientation).
    public var canvasSize: PixelSize
    /// How long each frame shows, in seconds, by the decoder's rules (GIF: a delay under 20 ms
    /// shows for 100 ms; WebP: 10 ms or less shows for 100 ms); 0 for a lone frame.
    public var durations: [TimeInterval]
    /// How many times the animation plays; 0 means forever (as ``DecodedImage/loopCount``).
    public var loopCount: Int
    /// Whether any frame may have transparent pixels (a transparent index or a cleared area in a
    /// GIF, the alpha flag of a WebP).
    public var mayHaveAlpha: Bool
    /// The EXIF orientation of the stored pixels.
    public var orientation: ImageOrientation

    /// The frames the file holds.
    public var frameCount: Int { durations.count }

    /// The whole animation's play time, once through.
    public var totalDuration: TimeInterval { durations.reduce(0, +) }
}
