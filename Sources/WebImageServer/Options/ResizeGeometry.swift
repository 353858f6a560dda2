import Foundation
import WebImageCoders

/// The sizes one request's processing goes through, by imgproxy 3's arithmetic (its
/// `calcScale`, result size and fill-down crop): the source (after the orientation and
/// `rotate`), the crop of the source, the resized image, the crop to the result, and the output
/// (extended to the box when `extend` is on). Rounded half away from zero.
public struct ResizeGeometry: Sendable, Hashable {
    /// The source as displayed: after the EXIF orientation (with `auto_rotate`) and `rotate`.
    public var source: PixelSize
    /// The part of the source that is resized (`crop`), or the whole source.
    public var cropped: PixelSize
    /// The size the cropped source is resized to.
    public var scaled: PixelSize
    /// The window cut from the scaled image (equal to `scaled` when nothing is cut).
    public var resultCrop: PixelSize
    /// `resultCrop`, or the box when `extend` pads a smaller image (or the box's aspect ratio
    /// with `extend_aspect_ratio`).
    public var output: PixelSize
    /// `padding`'s bands in result pixels (times the dpr applied, rounded to even).
    public var padding: Padding
    /// The final size: `output` with the padding.
    public var padded: PixelSize
    /// The device pixel ratio actually applied (less than `dpr` when a small image is not
    /// enlarged): what pixel offsets of the result crop and `extend` are multiplied by.
    public var dprScale: Double

    /// The plan for a source of `size` pixels as stored, with EXIF `orientation`.
    public init(source size: PixelSize, orientation: ImageOrientation = .up, options: ProcessingOptions) {
        let turned = (options.autoRotate && orientation.swapsDimensions) != (options.rotate % 180 == 90)
        source = turned ? PixelSize(width: size.height, height: size.width) : size
        cropped = PixelSize(
            width: Self.cropSide(source.width, options.crop?.width ?? 0),
            height: Self.cropSide(source.height, options.crop?.height ?? 0)
        )
        let (widthScale, heightScale, dprScale) = Self.scales(for: cropped, options: options)
        self.dprScale = dprScale
        scaled = PixelSize(
            width: max(1, Self.round(Double(cropped.width) * widthScale)),
            height: max(1, Self.round(Double(cropped.height) * heightScale))
        )
        // The box at the resolution asked for; a side of 0 keeps the scaled side.
        var boxWidth = Self.round(Double(options.width) * dprScale * options.zoomWidth)
        var boxHeight = Self.round(Double(options.height) * dprScale * options.zoomHeight)
        if options.resizingType == .fillDown, boxWidth > 0, boxHeight > 0 {
            let overWidth = Double(boxWidth) / Double(scaled.width)
            let overHeight = Double(boxHeight) / Double(scaled.height)
            if overWidth > overHeight, overWidth > 1 {
                boxHeight = Self.round(Double(scaled.width) * Double(boxHeight) / Double(boxWidth))
                boxWidth = scaled.width
            } else if overHeight > overWidth, overHeight > 1 {
                boxWidth = Self.round(Double(scaled.height) * Double(boxWidth) / Double(boxHeight))
                boxHeight = scaled.height
            }
        }
        resultCrop = PixelSize(
            width: boxWidth > 0 ? min(boxWidth, scaled.width) : scaled.width,
            height: boxHeight > 0 ? min(boxHeight, scaled.height) : scaled.height
        )
        if options.extend {
            output = PixelSize(width: max(resultCrop.width, boxWidth), height: max(resultCrop.height, boxHeight))
        } else if options.extendAspectRatio, boxWidth > 0, boxHeight > 0 {
            output = Self.aspectExtended(resultCrop, toAspectOf: PixelSize(width: boxWidth, height: boxHeight))
        } else {
            output = resultCrop
        }
        func even(_ side: Int) -> Int { Self.saturating((Double(side) * dprScale).rounded(.toNearestOrEven)) }
        padding = Padding(
            top: even(options.padding.top),
            right: even(options.padding.right),
            bottom: even(options.padding.bottom),
            left: even(options.padding.left)
        )
        padded = PixelSize(
            width: output.width + padding.left + padding.right,
            height: output.height + padding.top + padding.bottom
        )
    }

    /// `size` grown on one side to `box`'s aspect ratio (imgproxy's `extend_aspect_ratio`).
    private static func aspectExtended(_ size: PixelSize, toAspectOf box: PixelSize) -> PixelSize {
        let overWidth = Double(box.width) / Double(size.width)
        let overHeight = Double(box.height) / Double(size.height)
        if overHeight > overWidth {
            return PixelSize(
                width: size.width,
                height: round(Double(size.width) * Double(box.height) / Double(box.width))
            )
        }
        if overWidth > overHeight {
            return PixelSize(
                width: round(Double(size.height) * Double(box.width) / Double(box.height)),
                height: size.height
            )
        }
        return size
    }

    /// A crop side: 0 keeps the side, ≥ 1 is pixels, below 1 a fraction of the side.
    private static func cropSide(_ side: Int, _ crop: Double) -> Int {
        switch crop {
        case 0: side
        case 1...: min(side, saturating(crop.rounded(.down)))
        default: max(1, round(Double(side) * crop))
        }
    }

    /// imgproxy's `calcScale`: the horizontal and vertical scale and the device-pixel-ratio
    /// scale actually used (less than `dpr` when enlarging is off and the image is small).
    private static func scales(for source: PixelSize, options: ProcessingOptions) -> (Double, Double, Double) {
        let sourceWidth = Double(source.width)
        let sourceHeight = Double(source.height)
        let boxWidth = options.width == 0 ? sourceWidth : Double(options.width)
        let boxHeight = options.height == 0 ? sourceHeight : Double(options.height)
        var widthShrink = boxWidth == sourceWidth ? 1 : sourceWidth / boxWidth
        var heightShrink = boxHeight == sourceHeight ? 1 : sourceHeight / boxHeight
        if widthShrink != 1 || heightShrink != 1 {
            var type = options.resizingType
            if type == .auto {
                let sameOrientation = (sourceWidth >= sourceHeight) == (boxWidth >= boxHeight)
                type = sameOrientation ? .fill : .fit
            }
            if options.width == 0, type != .force {
                widthShrink = heightShrink
            } else if options.height == 0, type != .force {
                heightShrink = widthShrink
            } else if type == .fit {
                widthShrink = max(widthShrink, heightShrink)
                heightShrink = widthShrink
            } else if type == .fill || type == .fillDown {
                widthShrink = min(widthShrink, heightShrink)
                heightShrink = widthShrink
            }
        }
        widthShrink /= options.zoomWidth
        heightShrink /= options.zoomHeight
        var dprScale = options.dpr
        if !options.enlarge {
            let smallest = min(widthShrink, heightShrink)
            if smallest < 1 {
                widthShrink /= smallest
                heightShrink /= smallest
                if !options.extend { dprScale /= smallest }
            }
            dprScale = min(dprScale, min(widthShrink, heightShrink))
        }
        // min-width and min-height: at least that side, the other following (cropped by the box).
        if options.minWidth > 0, sourceWidth / Double(options.minWidth) < widthShrink {
            let least = sourceWidth / Double(options.minWidth)
            heightShrink /= widthShrink / least
            widthShrink = least
        }
        if options.minHeight > 0, sourceHeight / Double(options.minHeight) < heightShrink {
            let least = sourceHeight / Double(options.minHeight)
            widthShrink /= heightShrink / least
            heightShrink = least
        }
        widthShrink = min(widthShrink / dprScale, sourceWidth)
        heightShrink = min(heightShrink / dprScale, sourceHeight)
        return (1 / widthShrink, 1 / heightShrink, dprScale)
    }

    /// Rounds half away from zero, as Go's `math.Round`.
    static func round(_ value: Double) -> Int { saturating(value.rounded(.toNearestOrAwayFromZero)) }

    /// `value` (already rounded) as an `Int` within ±2³¹: a side past every limit, refused later,
    /// whose products with another side still fit an `Int`; NaN is 0. URL options (a crop of
    /// 1e30, a dpr of 1e300 with enlarging) reach here, so no conversion may trap.
    static func saturating(_ value: Double) -> Int { Int(saturating: value, in: -2_147_483_648...2_147_483_648) }
}
