import Foundation
import WebImageCoders

/// Changes a loaded image before it is cached and delivered (SDImageTransformer).
///
/// ``ImageManager`` caches a transformed image under the original key plus
/// ``transformerKey``, so transformed and original images never mix. Transformers run off
/// the callback queue, on the loading task.
public protocol ImageTransformer: Sendable {
    /// A stable key naming the transformation and its parameters (`Resize(fill,100x100)`).
    var transformerKey: String { get }
    /// The transformed image, or `nil` when it cannot be made (the load then fails with
    /// `badImageData`).
    func transform(_ image: DecodedImage, forKey key: String) -> DecodedImage?
    /// Whether an animation's transform is each frame's own, made as a one-frame image (no
    /// frame depends on another, the frame count and durations stay): ``ImageManager`` then
    /// decodes and transforms an animation a frame at a time, holding one source canvas and
    /// the transformed frames. Default `false`; `true` for every ``BitmapTransformer``,
    /// ``OrientTransformer`` and a ``PipelineTransformer`` of such transformers.
    var transformsFramesIndependently: Bool { get }
}

extension ImageTransformer {
    public var transformsFramesIndependently: Bool { false }
}

/// A transformer applied to every frame's bitmap the same way.
public protocol BitmapTransformer: ImageTransformer {
    func transform(_ bitmap: Bitmap) -> Bitmap?
}

extension BitmapTransformer {
    public var transformsFramesIndependently: Bool { true }

    public func transform(_ image: DecodedImage, forKey key: String) -> DecodedImage? {
        var frames: [DecodedImage.Frame] = []
        frames.reserveCapacity(image.frames.count)
        for frame in image.frames {
            guard let bitmap = transform(frame.bitmap) else { return nil }
            frames.append(DecodedImage.Frame(bitmap: bitmap, duration: frame.duration))
        }
        // Everything else (orientation, colour profile, EXIF) carries over.
        var result = image
        result.frames = frames
        return result
    }
}

/// SDWebImage's transformed key: the original key, `-`, the transformer's key. ``ImageManager``
/// no longer caches under it (a URL ending in `-key` would collide); it uses ``ImageCacheKey``.
public func transformedCacheKey(_ key: String, transformerKey: String) -> String {
    key + "-" + transformerKey
}

/// Several transformers in order (SDImagePipelineTransformer); its key joins theirs.
public struct PipelineTransformer: ImageTransformer {
    /// The transformers, applied first to last.
    public var transformers: [any ImageTransformer]

    /// A pipeline of `transformers`, applied in order.
    public init(_ transformers: [any ImageTransformer]) { self.transformers = transformers }

    public var transformerKey: String { transformers.map(\.transformerKey).joined(separator: "-") }

    public var transformsFramesIndependently: Bool { transformers.allSatisfy(\.transformsFramesIndependently) }

    public func transform(_ image: DecodedImage, forKey key: String) -> DecodedImage? {
        var current = image
        for transformer in transformers {
            guard let next = transformer.transform(current, forKey: key) else { return nil }
            current = next
        }
        return current
    }
}

/// Resizes to `size`: `.fit` inside it keeping the aspect ratio, `.fill` covering it and
/// cropping the centre, `.exact` stretching to it. A side of 0 follows the aspect ratio (as in
/// imgproxy): `200×0` is 200 pixels wide in every mode.
public struct ResizeTransformer: BitmapTransformer {
    /// How the image meets the target size.
    public enum Mode: String, Sendable, Hashable {
        case fit, fill, exact
    }

    /// The target size in pixels.
    public var size: PixelSize
    /// Fit inside, fill and crop, or stretch.
    public var mode: Mode
    /// Which part `.fill` keeps. Default `.center`.
    public var gravity: ImageGravity
    /// The most pixels the resized image may have (for `.fill`, before its crop); a larger one
    /// is not made: the transform gives no image and the load fails with `badImageData`, where
    /// the allocation would otherwise take the process down. Default 100,000,000, as decoding's
    /// `maxPixelCount`.
    public var maxPixelCount = 100_000_000

    /// Resizes to `size` by `mode` (default `.fit`); `.fill` keeps the `gravity` side (default
    /// the centre).
    public init(size: PixelSize, mode: Mode = .fit, gravity: ImageGravity = .center) {
        self.size = size
        self.mode = mode
        self.gravity = gravity
    }

    public var transformerKey: String {
        let anchor = mode == .fill && gravity != .center ? ",\(gravity.rawValue)" : ""
        return "Resize(\(mode.rawValue),\(size.width)x\(size.height)\(anchor))"
    }

    public func transform(_ bitmap: Bitmap) -> Bitmap? {
        guard size.width >= 0, size.height >= 0, size.width > 0 || size.height > 0 else { return nil }
        var scaleX = Double(size.width) / Double(bitmap.width)
        var scaleY = Double(size.height) / Double(bitmap.height)
        if size.width == 0 { scaleX = scaleY }
        if size.height == 0 { scaleY = scaleX }
        let target =
            switch mode {
            case .exact: scaled(bitmap, scaleX, scaleY)
            case .fit: scaled(bitmap, min(scaleX, scaleY))
            case .fill: scaled(bitmap, max(scaleX, scaleY))
            }
        let pixels = target.width.multipliedReportingOverflow(by: target.height)
        guard !pixels.overflow, pixels.partialValue <= maxPixelCount else { return nil }
        switch mode {
        case .exact, .fit:
            return bitmap.resized(to: target)
        case .fill:
            let covering = bitmap.resized(to: target)
            let cut = PixelSize(
                width: min(size.width == 0 ? covering.width : size.width, covering.width),
                height: min(size.height == 0 ? covering.height : size.height, covering.height)
            )
            let origin = gravity.origin(of: cut, in: PixelSize(width: covering.width, height: covering.height))
            return covering.cropped(x: origin.x, y: origin.y, width: cut.width, height: cut.height)
        }
    }

    private func scaled(_ bitmap: Bitmap, _ scale: Double) -> PixelSize { scaled(bitmap, scale, scale) }

    /// The bitmap's size times the scales, each side at least 1 and at most `Int32.max` (a
    /// size of `Int.max` must not trap on its way to being refused).
    private func scaled(_ bitmap: Bitmap, _ scaleX: Double, _ scaleY: Double) -> PixelSize {
        func side(_ value: Double) -> Int { Int(saturating: value.rounded(), in: 1...Int(Int32.max)) }
        return PixelSize(width: side(Double(bitmap.width) * scaleX), height: side(Double(bitmap.height) * scaleY))
    }
}

/// Cuts out a rectangle (clipped to the image; `nil` when nothing is left).
public struct CropTransformer: BitmapTransformer {
    /// Left edge, in pixels (with ``gravity``: the offset from the anchored position).
    public var x: Int
    /// Top edge, in pixels (with ``gravity``: the offset from the anchored position).
    public var y: Int
    /// Width of the rectangle.
    public var width: Int
    /// Height of the rectangle.
    public var height: Int
    /// Where the rectangle is anchored in the image; `nil`: at (`x`, `y`) from the top left.
    public var gravity: ImageGravity?

    /// Crops the rectangle at (`x`, `y`) of `width` × `height`.
    public init(x: Int, y: Int, width: Int, height: Int) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }

    /// Crops `width` × `height` anchored at `gravity` (ImageMagick's `-gravity` with `-crop`),
    /// moved by (`x`, `y`); a rectangle larger than the image is clipped to it.
    public init(width: Int, height: Int, gravity: ImageGravity, x: Int = 0, y: Int = 0) {
        self.init(x: x, y: y, width: width, height: height)
        self.gravity = gravity
    }

    public var transformerKey: String {
        guard let gravity else { return "Crop(\(x),\(y),\(width)x\(height))" }
        return "Crop(\(gravity.rawValue),\(x),\(y),\(width)x\(height))"
    }

    public func transform(_ bitmap: Bitmap) -> Bitmap? {
        var (x, y) = (x, y)
        if let gravity {
            let cut = PixelSize(width: min(width, bitmap.width), height: min(height, bitmap.height))
            let origin = gravity.origin(of: cut, in: PixelSize(width: bitmap.width, height: bitmap.height))
            (x, y) = (origin.x + x, origin.y + y)
        }
        let left = max(0, x)
        let top = max(0, y)
        let right = min(bitmap.width, x + width)
        let bottom = min(bitmap.height, y + height)
        guard right > left, bottom > top else { return nil }
        return bitmap.cropped(x: left, y: top, width: right - left, height: bottom - top)
    }
}

/// Makes the corners transparent with an anti-aliased quarter circle of `radius` pixels.
public struct RoundCornerTransformer: BitmapTransformer {
    /// Corner radius in pixels (at most half the shorter side).
    public var radius: Double

    /// Rounds corners with `radius` pixels.
    public init(radius: Double) { self.radius = radius }

    public var transformerKey: String { "RoundCorner(\(radius))" }

    public func transform(_ bitmap: Bitmap) -> Bitmap? {
        let radius = max(0, min(radius, Double(min(bitmap.width, bitmap.height)) / 2))
        guard radius > 0 else { return bitmap }
        let (w, h) = (Double(bitmap.width), Double(bitmap.height))
        var result = bitmap.packed()
        result.hasAlpha = true
        result.updatePixels { x, y, pixel in
            let px = Double(x) + 0.5
            let py = Double(y) + 0.5
            let cx = px < radius ? radius : (px > w - radius ? w - radius : px)
            let cy = py < radius ? radius : (py > h - radius ? h - radius : py)
            let distance = ((px - cx) * (px - cx) + (py - cy) * (py - cy)).squareRoot()
            let coverage = max(0, min(1, radius - distance + 0.5))
            if coverage < 1 { pixel.a = UInt8((Double(pixel.a) * coverage).rounded()) }
        }
        return result
    }
}

/// Mirrors horizontally and/or vertically.
public struct FlipTransformer: BitmapTransformer {
    /// Mirror left to right.
    public var horizontal: Bool
    /// Mirror top to bottom.
    public var vertical: Bool

    /// Flips horizontally and/or vertically.
    public init(horizontal: Bool, vertical: Bool = false) {
        self.horizontal = horizontal
        self.vertical = vertical
    }

    public var transformerKey: String { "Flip(\(horizontal ? "h" : "")\(vertical ? "v" : ""))" }

    public func transform(_ bitmap: Bitmap) -> Bitmap? {
        switch (horizontal, vertical) {
        case (true, true): bitmap.applyingOrientation(.down)
        case (true, false): bitmap.applyingOrientation(.upMirrored)
        case (false, true): bitmap.applyingOrientation(.downMirrored)
        case (false, false): bitmap
        }
    }
}

/// Rotates clockwise by a multiple of 90°.
public struct RotateTransformer: BitmapTransformer {
    /// Clockwise quarter turns (negative turns counter-clockwise).
    public var quarterTurns: Int

    /// Rotates by `quarterTurns` × 90° clockwise.
    public init(quarterTurns: Int) { self.quarterTurns = quarterTurns }

    public var transformerKey: String { "Rotate(\(((quarterTurns % 4) + 4) % 4 * 90))" }

    public func transform(_ bitmap: Bitmap) -> Bitmap? {
        // An EXIF orientation names how the stored pixels are turned; applying `.right` turns
        // them clockwise.
        switch ((quarterTurns % 4) + 4) % 4 {
        case 1: bitmap.applyingOrientation(.right)
        case 2: bitmap.applyingOrientation(.down)
        case 3: bitmap.applyingOrientation(.left)
        default: bitmap
        }
    }
}

/// Grey by luma (ITU-R BT.601 weights), alpha kept.
public struct GrayscaleTransformer: BitmapTransformer {
    /// A grayscale transformer.
    public init() {}

    public var transformerKey: String { "Grayscale" }

    public func transform(_ bitmap: Bitmap) -> Bitmap? {
        var result = bitmap.packed()
        result.updatePixels { _, _, pixel in
            let luma = (299 * Int(pixel.r) + 587 * Int(pixel.g) + 114 * Int(pixel.b) + 500) / 1000
            pixel.r = UInt8(luma)
            pixel.g = UInt8(luma)
            pixel.b = UInt8(luma)
        }
        return result
    }
}

/// Blends `color` over every pixel by `fraction` (0 keeps the image, 1 paints it), alpha kept.
public struct TintTransformer: BitmapTransformer {
    /// The tint colour; its alpha scales `fraction`.
    public var color: RGBA
    /// How much of the colour to blend in, 0...1.
    public var fraction: Double

    /// Tints with `color` by `fraction` (default 0.5).
    public init(color: RGBA, fraction: Double = 0.5) {
        self.color = color
        self.fraction = fraction
    }

    public var transformerKey: String { "Tint(\(color.r),\(color.g),\(color.b),\(color.a),\(fraction))" }

    public func transform(_ bitmap: Bitmap) -> Bitmap? {
        let amount = max(0, min(1, fraction)) * Double(color.a) / 255
        var result = bitmap.packed()
        result.updatePixels { _, _, pixel in
            pixel.r = UInt8((Double(pixel.r) * (1 - amount) + Double(color.r) * amount).rounded())
            pixel.g = UInt8((Double(pixel.g) * (1 - amount) + Double(color.g) * amount).rounded())
            pixel.b = UInt8((Double(pixel.b) * (1 - amount) + Double(color.b) * amount).rounded())
        }
        return result
    }
}

/// A Gaussian-like blur: three box blurs of `radius` pixels, in premultiplied alpha so
/// transparent pixels do not darken their neighbours.
public struct BlurTransformer: BitmapTransformer {
    /// Box radius in pixels; 0 leaves the image as it is.
    public var radius: Int

    /// Blurs with `radius` pixels.
    public init(radius: Int) { self.radius = radius }

    public var transformerKey: String { "Blur(\(radius))" }

    public func transform(_ bitmap: Bitmap) -> Bitmap? {
        guard radius > 0 else { return bitmap }
        let source = bitmap.packed()
        let (width, height) = (source.width, source.height)
        var channels = [Double](repeating: 0, count: width * height * 4)
        for index in 0..<width * height {
            let alpha = Double(source.pixels[index * 4 + 3]) / 255
            for channel in 0..<3 { channels[index * 4 + channel] = Double(source.pixels[index * 4 + channel]) * alpha }
            channels[index * 4 + 3] = Double(source.pixels[index * 4 + 3])
        }
        for _ in 0..<3 {
            boxBlur(&channels, width: width, height: height, horizontal: true)
            boxBlur(&channels, width: width, height: height, horizontal: false)
        }
        var result = source
        result.updatePixels { x, y, pixel in
            let offset = (y * width + x) * 4
            let alpha = channels[offset + 3]
            pixel.a = UInt8(max(0, min(255, alpha.rounded())))
            let unpremultiply = alpha > 0 ? 255 / alpha : 0
            pixel.r = UInt8(max(0, min(255, (channels[offset] * unpremultiply).rounded())))
            pixel.g = UInt8(max(0, min(255, (channels[offset + 1] * unpremultiply).rounded())))
            pixel.b = UInt8(max(0, min(255, (channels[offset + 2] * unpremultiply).rounded())))
        }
        return result
    }

    /// One box pass along rows or columns; edges repeat the border pixel.
    private func boxBlur(_ values: inout [Double], width: Int, height: Int, horizontal: Bool) {
        let (lines, length) = horizontal ? (height, width) : (width, height)
        let window = Double(2 * radius + 1)
        var line = [Double](repeating: 0, count: length * 4)
        for lineIndex in 0..<lines {
            func offset(_ position: Int) -> Int {
                let clamped = max(0, min(length - 1, position))
                return (horizontal ? lineIndex * width + clamped : clamped * width + lineIndex) * 4
            }
            for channel in 0..<4 {
                var sum = 0.0
                for position in -radius...radius { sum += values[offset(position) + channel] }
                for position in 0..<length {
                    line[position * 4 + channel] = sum / window
                    sum += values[offset(position + radius + 1) + channel] - values[offset(position - radius) + channel]
                }
            }
            for position in 0..<length {
                let target = offset(position)
                for channel in 0..<4 { values[target + channel] = line[position * 4 + channel] }
            }
        }
    }
}

extension Bitmap {
    /// The same pixels with rows packed (`bytesPerRow == width * 4`).
    func packed() -> Bitmap {
        if bytesPerRow == width * 4 { return self }
        return cropped(x: 0, y: 0, width: width, height: height)
    }

    /// A copy of the rectangle at (`x`, `y`); the caller keeps it inside the bitmap.
    func cropped(x: Int, y: Int, width: Int, height: Int) -> Bitmap {
        var pixels = [UInt8]()
        pixels.reserveCapacity(width * height * 4)
        for row in y..<y + height {
            let start = row * bytesPerRow + x * 4
            pixels.append(contentsOf: self.pixels[start..<start + width * 4])
        }
        return Bitmap(width: width, height: height, hasAlpha: hasAlpha, pixels: pixels)
    }

    /// Rewrites every pixel of a packed bitmap in place.
    mutating func updatePixels(_ update: (Int, Int, inout RGBA) -> Void) {
        let width = width
        pixels.withUnsafeMutableBufferPointer { buffer in
            for index in 0..<buffer.count / 4 {
                var pixel = RGBA(
                    r: buffer[index * 4],
                    g: buffer[index * 4 + 1],
                    b: buffer[index * 4 + 2],
                    a: buffer[index * 4 + 3]
                )
                update(index % width, index / width, &pixel)
                buffer[index * 4] = pixel.r
                buffer[index * 4 + 1] = pixel.g
                buffer[index * 4 + 2] = pixel.b
                buffer[index * 4 + 3] = pixel.a
            }
        }
    }
}

/// Where a smaller rectangle sits in a larger one: a side, a corner or the centre.
public enum ImageGravity: String, Sendable, Hashable, CaseIterable {
    case center, north, south, east, west
    case northEast = "north-east"
    case northWest = "north-west"
    case southEast = "south-east"
    case southWest = "south-west"

    /// The top-left corner of `size` placed in `container` by this gravity (`size` no larger).
    public func origin(of size: PixelSize, in container: PixelSize) -> (x: Int, y: Int) {
        let spareX = max(0, container.width - size.width)
        let spareY = max(0, container.height - size.height)
        let x: Int =
            switch self {
            case .west, .northWest, .southWest: 0
            case .east, .northEast, .southEast: spareX
            case .center, .north, .south: spareX / 2
            }
        let y: Int =
            switch self {
            case .north, .northEast, .northWest: 0
            case .south, .southEast, .southWest: spareY
            case .center, .east, .west: spareY / 2
            }
        return (x, y)
    }
}

/// Turns the pixels upright by the image's EXIF orientation (the result's orientation is
/// `.up`), so that later transformers (crops, resizes) work on the image as it is shown.
public struct OrientTransformer: ImageTransformer {
    public init() {}

    public var transformerKey: String { "Orient" }

    public var transformsFramesIndependently: Bool { true }

    public func transform(_ image: DecodedImage, forKey key: String) -> DecodedImage? {
        guard image.orientation != .up else { return image }
        var oriented = image
        for index in oriented.frames.indices {
            oriented.frames[index].bitmap = oriented.frames[index].bitmap.applyingOrientation(image.orientation)
        }
        oriented.orientation = .up
        return oriented
    }
}
