import Foundation
import WebImage
import WebImageCoders

/// imgproxy's `watermark:OPACITY:POSITION:X:Y:SCALE`: the server's watermark image laid over
/// the result.
public struct WatermarkOptions: Sendable, Hashable, CustomStringConvertible {
    /// Where the watermark goes.
    public enum Position: Sendable, Hashable {
        /// One copy, placed by a gravity (not `sm` or a focus point) and the offsets.
        case gravity(ProxyGravity)
        /// Tiled over the whole result, centred, the offsets as spacing between tiles (`re`).
        case replicate
    }

    /// 0…1, times the server's `--watermark-opacity`.
    public var opacity: Double
    public var position: Position = .gravity(.center)
    /// Pixels (times the dpr applied) from 1 up, shares of the result's side below 1.
    public var offset = GravityOffset()
    /// The watermark fitted into this share of the result's size; 0: its own size.
    public var scale: Double = 0

    public init(
        opacity: Double,
        position: Position = .gravity(.center),
        offset: GravityOffset = GravityOffset(),
        scale: Double = 0
    ) {
        self.opacity = opacity
        self.position = position
        self.offset = offset
        self.scale = scale
    }

    public var description: String { "\(opacity):\(position):\(offset):\(scale)" }

    static let positions: [String: Position] = [
        "ce": .gravity(.center), "no": .gravity(.north), "so": .gravity(.south), "ea": .gravity(.east),
        "we": .gravity(.west), "noea": .gravity(.northEast), "nowe": .gravity(.northWest),
        "soea": .gravity(.southEast), "sowe": .gravity(.southWest), "re": .replicate,
    ]
}

/// Lays a watermark over a processed image as imgproxy does: fitted (enlarging) into `scale` of
/// the result when asked, placed by `calcPosition` allowing it to hang over the edges, or tiled
/// from the centre with the offsets as spacing, its alpha times the opacity, composited over.
enum WatermarkComposer {
    /// `image` with `mark` over every frame; `dprScale` multiplies pixel offsets.
    static func apply(
        _ mark: Bitmap,
        to image: DecodedImage,
        options: WatermarkOptions,
        opacity: Double,
        dprScale: Double
    ) -> DecodedImage {
        guard opacity > 0 else { return image }
        let canvas = PixelSize(width: image.bitmap.width, height: image.bitmap.height)
        let prepared = prepared(mark, for: canvas, options: options, dprScale: dprScale)
        var result = image
        result.frames = image.frames.map { frame in
            let bitmap: Bitmap
            switch options.position {
            case .replicate:
                bitmap = tiled(prepared, over: frame.bitmap, opacity: opacity)
            case .gravity(let gravity):
                let origin = ImageProcessor.position(
                    of: PixelSize(width: prepared.width, height: prepared.height),
                    in: canvas,
                    placement: ImageProcessor.Placement(gravity: gravity, offset: options.offset),
                    offsetScale: dprScale,
                    overflowing: true
                )
                bitmap = composited(prepared, over: frame.bitmap, at: origin, opacity: opacity)
            }
            return DecodedImage.Frame(bitmap: bitmap, duration: frame.duration)
        }
        return result
    }

    /// The watermark at its size for `canvas` and, when tiled, with the spacing around it.
    private static func prepared(
        _ mark: Bitmap,
        for canvas: PixelSize,
        options: WatermarkOptions,
        dprScale: Double
    ) -> Bitmap {
        func toEven(_ value: Double) -> Int { ResizeGeometry.saturating(value.rounded(.toNearestOrEven)) }
        var current = mark
        if options.scale > 0 {
            // At most the canvas: a larger mark only shows the canvas's worth of it, and a URL's
            // scale of 1e20 must not become a bitmap of 2³¹ pixels a side.
            let box = (
                width: min(canvas.width, max(1, toEven(Double(canvas.width) * options.scale))),
                height: min(canvas.height, max(1, toEven(Double(canvas.height) * options.scale)))
            )
            let factor = min(Double(box.width) / Double(mark.width), Double(box.height) / Double(mark.height))
            let size = PixelSize(
                width: max(1, ResizeGeometry.round(Double(mark.width) * factor)),
                height: max(1, ResizeGeometry.round(Double(mark.height) * factor))
            )
            if size.width != mark.width || size.height != mark.height {
                current = current.resized(to: size, cancellation: nil) ?? current
            }
        }
        guard options.position == .replicate else { return current }
        func spacing(_ value: Double, side: Int) -> Int {
            abs(value) >= 1 ? toEven(value * dprScale) : toEven(Double(side) * value)
        }
        // Spacing past the canvas leaves one tile on it either way: at most the canvas.
        let padX = min(canvas.width, max(0, spacing(options.offset.x, side: canvas.width)))
        let padY = min(canvas.height, max(0, spacing(options.offset.y, side: canvas.height)))
        guard padX > 0 || padY > 0 else { return current }
        return ImageProcessor.padded(
            current,
            to: PixelSize(width: current.width + padX, height: current.height + padY),
            background: nil,
            at: (padX / 2, padY / 2)
        )
    }

    /// Tiles repeated from the centre: an odd number of them across and down, centred on the
    /// canvas (libvips's centred replicate).
    private static func tiled(_ tile: Bitmap, over base: Bitmap, opacity: Double) -> Bitmap {
        func oddCount(_ canvas: Int, _ side: Int) -> Int {
            let count = (canvas + side - 1) / side
            return count.isMultiple(of: 2) ? count + 1 : count
        }
        let shiftX = (oddCount(base.width, tile.width) * tile.width - base.width) / 2
        let shiftY = (oddCount(base.height, tile.height) * tile.height - base.height) / 2
        let everywhere = (x: 0..<base.width, y: 0..<base.height)
        return blended(base, in: everywhere, opacity: opacity) { x, y in
            tile[(x + shiftX) % tile.width, (y + shiftY) % tile.height]
        }
    }

    private static func composited(
        _ mark: Bitmap,
        over base: Bitmap,
        at origin: (x: Int, y: Int),
        opacity: Double
    ) -> Bitmap {
        let covered = (
            x: max(0, origin.x)..<min(base.width, origin.x + mark.width),
            y: max(0, origin.y)..<min(base.height, origin.y + mark.height)
        )
        return blended(base, in: covered, opacity: opacity) { x, y in mark[x - origin.x, y - origin.y] }
    }

    /// `base` with `overlay(x, y)` composited over each pixel of `region` ("over", straight
    /// alpha), the overlay's alpha times `opacity`; an opaque base stays opaque.
    private static func blended(
        _ base: Bitmap,
        in region: (x: Range<Int>, y: Range<Int>),
        opacity: Double,
        overlay: (Int, Int) -> RGBA
    ) -> Bitmap {
        var result = base
        guard !region.x.isEmpty, !region.y.isEmpty else { return result }
        for y in region.y {
            for x in region.x {
                let over = overlay(x, y)
                guard over.a > 0 else { continue }
                let under = base[x, y]
                let alpha = Double(over.a) / 255 * opacity
                let baseAlpha = Double(under.a) / 255
                let outAlpha = alpha + baseAlpha * (1 - alpha)
                func mix(_ top: UInt8, _ bottom: UInt8) -> UInt8 {
                    guard outAlpha > 0 else { return 0 }
                    let value = (Double(top) * alpha + Double(bottom) * baseAlpha * (1 - alpha)) / outAlpha
                    return UInt8(min(255, max(0, value.rounded())))
                }
                result[x, y] = RGBA(
                    r: mix(over.r, under.r),
                    g: mix(over.g, under.g),
                    b: mix(over.b, under.b),
                    a: base.hasAlpha ? UInt8(min(255, (outAlpha * 255).rounded())) : 255
                )
            }
        }
        return result
    }
}
