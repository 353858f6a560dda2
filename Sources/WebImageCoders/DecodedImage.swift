import Foundation

/// A decoded image: one frame for a still image, several for an animation.
///
/// Every frame is a full canvas-sized ``Bitmap`` already composed (disposal and blending
/// applied), so frame *n* can be shown as it is. `Sendable`; frames share storage on copy.
public struct DecodedImage: Sendable {
    /// One frame of an animation (or the single frame of a still image).
    public struct Frame: Sendable {
        /// The composed canvas for this frame.
        public var bitmap: Bitmap
        /// How long the frame shows, in seconds (0 for still images).
        public var duration: TimeInterval

        public init(bitmap: Bitmap, duration: TimeInterval = 0) {
            self.bitmap = bitmap
            self.duration = duration
        }
    }

    /// The frames, at least one.
    public var frames: [Frame]
    /// How many times the animation plays; 0 means forever (SDWebImage's convention).
    /// GIF's NETSCAPE value *n* is *n* repeats after the first play, so it becomes *n* + 1;
    /// a GIF without the extension, and every still image, plays once (1).
    public var loopCount: Int
    /// The format the image was decoded from.
    public var format: ImageFormat
    /// The EXIF orientation of the stored pixels. `.up` once orientation has been applied.
    public var orientation: ImageOrientation
    /// `true` for an image decoded from incomplete data (a progressive preview).
    public var isPartial: Bool
    /// Pixel size of the source before any thumbnail or scale-down, as stored (not oriented).
    public var sourceSize: PixelSize
    /// The number of frames the source declares, even when only the first was decoded.
    public var sourceFrameCount: Int

    public init(
        frames: [Frame],
        loopCount: Int = 1,
        format: ImageFormat,
        orientation: ImageOrientation = .up,
        isPartial: Bool = false,
        sourceSize: PixelSize? = nil,
        sourceFrameCount: Int? = nil
    ) {
        precondition(!frames.isEmpty, "a decoded image has at least one frame")
        self.frames = frames
        self.loopCount = loopCount
        self.format = format
        self.orientation = orientation
        self.isPartial = isPartial
        self.sourceSize = sourceSize ?? PixelSize(width: frames[0].bitmap.width, height: frames[0].bitmap.height)
        self.sourceFrameCount = sourceFrameCount ?? frames.count
    }

    /// A still image of one bitmap.
    public init(bitmap: Bitmap, format: ImageFormat, orientation: ImageOrientation = .up) {
        self.init(frames: [Frame(bitmap: bitmap)], format: format, orientation: orientation)
    }

    /// The first frame: the image to show when not animating.
    public var bitmap: Bitmap { frames[0].bitmap }
    /// Width of the delivered pixels.
    public var width: Int { bitmap.width }
    /// Height of the delivered pixels.
    public var height: Int { bitmap.height }
    /// More than one frame was decoded.
    public var isAnimated: Bool { frames.count > 1 }
    /// Whether the pixels may contain transparency.
    public var hasAlpha: Bool { frames.contains { $0.bitmap.hasAlpha } }
    /// Total duration of one play of the animation, in seconds.
    public var duration: TimeInterval { frames.reduce(0) { $0 + $1.duration } }
    /// Bytes held by every frame's pixels: the cost a memory cache charges for this image.
    public var cost: Int { frames.reduce(0) { $0 + $1.bitmap.byteCount } }
}

/// A size in whole pixels.
public struct PixelSize: Sendable, Hashable, Codable, CustomStringConvertible {
    public var width: Int
    public var height: Int

    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    public var pixelCount: Int { width * height }
    public var description: String { "\(width)×\(height)" }
}
