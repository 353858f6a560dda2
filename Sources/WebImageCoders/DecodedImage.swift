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

    /// Every stored property, behind one immutable reference (see ``Storage``).
    struct Fields: Sendable {
        var frames: [Frame]
        var loopCount: Int
        var format: ImageFormat
        var orientation: ImageOrientation
        var isPartial: Bool
        var sourceSize: PixelSize
        var sourceFrameCount: Int
        var colorProfile: ColorProfile?
        var exif: Data?
        var animation: AnimatedImage?
    }

    /// The image's contents, shared by every copy. Immutable: a setter makes a new one (cheap,
    /// the frames' pixels are shared). A reference lets a cache hold an image weakly and find it
    /// again while any copy of it is still in use.
    package final class Storage: Sendable {
        let fields: Fields
        init(_ fields: Fields) { self.fields = fields }
    }

    package private(set) var storage: Storage

    package init(storage: Storage) { self.storage = storage }

    private mutating func update(_ change: (inout Fields) -> Void) {
        var fields = storage.fields
        change(&fields)
        storage = Storage(fields)
    }

    /// The frames, at least one. Setting them drops an ``animation`` (the new frames are the image).
    public var frames: [Frame] {
        get { storage.fields.frames }
        set {
            update {
                $0.frames = newValue
                $0.animation = nil
            }
        }
    }
    /// How many times the animation plays; 0 means forever (SDWebImage's convention).
    /// GIF's NETSCAPE value *n* is *n* repeats after the first play, so it becomes *n* + 1;
    /// a GIF without the extension, and every still image, plays once (1).
    public var loopCount: Int {
        get { storage.fields.loopCount }
        set { update { $0.loopCount = newValue } }
    }
    /// The format the image was decoded from.
    public var format: ImageFormat {
        get { storage.fields.format }
        set { update { $0.format = newValue } }
    }
    /// The EXIF orientation of the stored pixels. `.up` once orientation has been applied.
    public var orientation: ImageOrientation {
        get { storage.fields.orientation }
        set { update { $0.orientation = newValue } }
    }
    /// `true` for an image decoded from incomplete data (a progressive preview).
    public var isPartial: Bool {
        get { storage.fields.isPartial }
        set { update { $0.isPartial = newValue } }
    }
    /// Pixel size of the source before any thumbnail or scale-down, as stored (not oriented).
    public var sourceSize: PixelSize {
        get { storage.fields.sourceSize }
        set { update { $0.sourceSize = newValue } }
    }
    /// The number of frames the source declares, even when only the first was decoded.
    public var sourceFrameCount: Int {
        get { storage.fields.sourceFrameCount }
        set { update { $0.sourceFrameCount = newValue } }
    }

    /// The ICC profile the pixels are in, when it is not sRGB and the decode kept it
    /// (``ColorPolicy/keep``); `nil` for sRGB pixels. Encoders embed it.
    public var colorProfile: ColorProfile? {
        get { storage.fields.colorProfile }
        set { update { $0.colorProfile = newValue } }
    }

    /// The source's EXIF block (TIFF header and IFDs, without JPEG's `Exif\0\0`), read when
    /// ``ImageDecodingOptions/keepsMetadata`` is on (JPEG, PNG `eXIf`, WebP `EXIF`); `nil`
    /// otherwise. The JPEG, PNG, WebP and AVIF encoders write it back with the orientation tag
    /// set to ``orientation``.
    public var exif: Data? {
        get { storage.fields.exif }
        set { update { $0.exif = newValue } }
    }

    /// The animation the other frames come from, decoded on demand, when the image was decoded
    /// with ``ImageDecodingOptions/framesOnDemand``: ``frames`` then holds its first frame (the
    /// poster) only. Play it with a frame buffer of bounded size (`AnimatedImagePlayer`), or
    /// ask it for ``AnimatedImage/frame(at:)``. `nil` for every other image.
    public var animation: AnimatedImage? {
        get { storage.fields.animation }
        set { update { $0.animation = newValue } }
    }

    // shape: public memberwise init: each parameter is a documented property with a default
    public init(
        frames: [Frame],
        loopCount: Int = 1,
        format: ImageFormat,
        orientation: ImageOrientation = .up,
        isPartial: Bool = false,
        sourceSize: PixelSize? = nil,
        sourceFrameCount: Int? = nil,
        colorProfile: ColorProfile? = nil
    ) {
        precondition(!frames.isEmpty, "a decoded image has at least one frame")
        storage = Storage(
            Fields(
                frames: frames,
                loopCount: loopCount,
                format: format,
                orientation: orientation,
                isPartial: isPartial,
                sourceSize: sourceSize ?? PixelSize(width: frames[0].bitmap.width, height: frames[0].bitmap.height),
                sourceFrameCount: sourceFrameCount ?? frames.count,
                colorProfile: colorProfile,
                exif: nil,
                animation: nil
            )
        )
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
    /// More than one frame was decoded (an animation decoded on demand holds one: see
    /// ``animation``).
    public var isAnimated: Bool { frames.count > 1 }
    /// Whether the pixels may contain transparency.
    public var hasAlpha: Bool { frames.contains { $0.bitmap.hasAlpha } }
    /// Total duration of one play of the animation, in seconds (an ``animation``'s, when the
    /// frames come on demand).
    public var duration: TimeInterval {
        animation.map { $0.info.durations.reduce(0, +) } ?? frames.reduce(0) { $0 + $1.duration }
    }
    /// Bytes the image holds: every frame's pixels, and an ``animation``'s encoded bytes (its
    /// frames are decoded when asked for, into the asker's buffer). The cost a memory cache
    /// charges for this image.
    public var cost: Int { frames.reduce(0) { $0 + $1.bitmap.byteCount } + (animation?.data.count ?? 0) }

    /// Whether `self` and `other` are copies of one decoded image (not merely equal pixels).
    public func isSameInstance(as other: DecodedImage) -> Bool { storage === other.storage }
}

/// A size in whole pixels.
public struct PixelSize: Sendable, Hashable, Codable, CustomStringConvertible {
    public var width: Int
    public var height: Int

    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    /// `width × height`, or `Int.max` when the product does not fit (a header may declare
    /// 2³²-pixel sides; limits compare against this before anything is allocated).
    public var pixelCount: Int {
        let product = width.multipliedReportingOverflow(by: height)
        return product.overflow ? Int.max : product.partialValue
    }
    public var description: String { "\(width)×\(height)" }
}
