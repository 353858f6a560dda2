import Foundation

/// Graphic control extension state for the next image.
struct GIFFrameControl {
    var disposal = 0
    var delayCentiseconds = 0
    var transparentIndex: Int?
}

/// One image block of a GIF: where it goes on the canvas and its colours.
struct GIFFrameImage {
    var rect: PixelRect
    var interlaced: Bool
    var colors: [RGBA]
    var transparentIndex: Int?

    /// All 256 indices mapped to a packed RGBA pixel; the transparent index (and only it) is 0.
    func pixelTable() -> [UInt32] {
        var table = [UInt32](repeating: 0xFF00_0000, count: 256)
        for (index, color) in colors.prefix(256).enumerated() {
            table[index] = UInt32(color.r) | UInt32(color.g) << 8 | UInt32(color.b) << 16 | 0xFF00_0000
        }
        if let transparentIndex, transparentIndex < 256 { table[transparentIndex] = 0 }
        return table
    }
}

/// A GIF's frames as they are composed: the canvas each image is drawn onto, each frame's
/// disposal applied after it, and what the file said about looping and transparency.
struct GIFComposition {
    let canvasSize: PixelSize
    let globalColors: [RGBA]?
    private(set) var canvas: Bitmap
    private(set) var frames: [DecodedImage.Frame] = []
    /// Image blocks seen, drawn or skipped.
    var frameCount = 0
    /// The graphic control for the next image.
    var control = GIFFrameControl()
    /// Plays from the first loop extension (0: forever); `nil` when there was none.
    var declaredLoopCount: Int?
    private var declaresTransparency = false
    private var mayHaveClearedPixels = false
    /// giflib's line buffer, reused by every image.
    private var line = [UInt8]()

    init(canvasSize: PixelSize, globalColors: [RGBA]?) {
        self.canvasSize = canvasSize
        self.globalColors = globalColors
        canvas = Bitmap(width: canvasSize.width, height: canvasSize.height)
    }

    /// Whether composed frames are kept for ``image()`` (a whole decode) or only returned (a
    /// frame source, which holds one canvas).
    var keepsFrames = true

    /// How long a frame with `control` shows: its delay, or 100 ms for a delay under 20 ms (as
    /// browsers play them).
    static func duration(of control: GIFFrameControl) -> TimeInterval {
        let delay = control.delayCentiseconds * 10
        return delay < 20 ? 0.1 : Double(delay) / 1000
    }

    /// Draws the next image, covering `rect`, with `draw` and returns the canvas as a frame
    /// (kept too with ``keepsFrames``), then applies the control's disposal (2: clear the
    /// image's area; 3: back to the canvas before).
    @discardableResult
    mutating func addFrame(
        covering rect: PixelRect,
        _ draw: (inout Bitmap, inout [UInt8]) throws(CoderError) -> Void
    ) throws(CoderError) -> DecodedImage.Frame {
        declaresTransparency = declaresTransparency || control.transparentIndex != nil
        let previous = control.disposal == 3 ? canvas : nil
        try draw(&canvas, &line)
        let frame = DecodedImage.Frame(bitmap: canvas, duration: Self.duration(of: control))
        if keepsFrames { frames.append(frame) }
        switch control.disposal {
        case 2:
            canvas.clear(rect)
            mayHaveClearedPixels = true
        case 3: canvas = previous ?? canvas
        default: break
        }
        control = GIFFrameControl()
        return frame
    }

    /// The decoded image: every frame with one alpha flag (transparency can only come from a
    /// transparent index, an uncovered canvas, or a clear), a lone frame with no duration.
    mutating func image() throws(CoderError) -> DecodedImage {
        guard !frames.isEmpty else { throw .corruptData(.gif, "the GIF has no image") }
        let hasAlpha = declaresTransparency || mayHaveClearedPixels || frames[0].bitmap.containsTransparency
        for index in frames.indices { frames[index].bitmap.hasAlpha = hasAlpha }
        if frames.count == 1 && frameCount == 1 { frames[0].duration = 0 }
        return DecodedImage(
            frames: frames,
            loopCount: frameCount > 1 ? declaredLoopCount ?? 1 : 1,
            format: .gif,
            sourceSize: canvasSize,
            sourceFrameCount: frameCount
        )
    }
}
