import Foundation
import WebImage
import WebImageCoders

/// Applies a request's ``ProcessingOptions`` to a decoded image, every frame alike, in
/// imgproxy's order: `trim`, orientation and `rotate`, the source crop, the resize, the crop to the
/// result, `extend`, blur and sharpen, then `background` under what stays transparent. Sizes
/// come from ``ResizeGeometry``. Synchronous
/// and CPU-bound: run it on a bounded work queue, never on an event loop.
public enum ImageProcessor {
    /// The processed image; its orientation is `.up` when `auto_rotate` applied it. Sizes are
    /// planned on the source's full size (`DecodedImage.sourceSize`), so an image decoded
    /// smaller (shrink on load) gives the same result sizes, resized once from fewer pixels.
    public static func process(_ image: DecodedImage, options: ProcessingOptions) -> DecodedImage {
        // Without a cancellation nothing stops it.
        process(image, options: options, cancellation: nil)!
    }

    /// ``process(_:options:)`` that stops between steps, frames and resampled rows once
    /// `cancellation` is raised, returning `nil` then.
    public static func process(
        _ image: DecodedImage,
        options: ProcessingOptions,
        cancellation: CodingCancellation?
    ) -> DecodedImage? {
        guard let image = trimmed(image, options: options, cancellation: cancellation) else { return nil }
        let geometry = ResizeGeometry(source: plannedSize(of: image), orientation: image.orientation, options: options)
        return process(image, geometry: geometry, options: options, cancellation: cancellation)
    }

    /// An untrimmed (or already trimmed) image processed to `geometry`, planned on its
    /// ``plannedSize(of:)`` and orientation; `nil` when `cancellation` was raised.
    static func process(
        _ image: DecodedImage,
        geometry: ResizeGeometry,
        options: ProcessingOptions,
        cancellation: CodingCancellation?
    ) -> DecodedImage? {
        var result = image
        let orientation = options.autoRotate ? image.orientation : .up
        var frames: [DecodedImage.Frame] = []
        frames.reserveCapacity(image.frames.count)
        for frame in image.frames {
            guard
                let bitmap = process(
                    frame.bitmap,
                    orientation: orientation,
                    geometry: geometry,
                    options: options,
                    cancellation: cancellation
                )
            else { return nil }
            // `background` fills what stays transparent (imgproxy flattens last).
            let flattened = options.background.map { bitmap.flattened(onto: $0) } ?? bitmap
            frames.append(DecodedImage.Frame(bitmap: flattened, duration: frame.duration))
        }
        result.frames = frames
        if options.autoRotate || options.stripMetadata { result.orientation = .up }
        return result
    }

    /// `options.trim` applied to a still image: its border cut off, and the cut size made the
    /// source size that sizes are planned on. Animations and images without `trim` come back
    /// as they are; `nil` when `cancellation` was raised.
    public static func trimmed(
        _ image: DecodedImage,
        options: ProcessingOptions,
        cancellation: CodingCancellation?
    ) -> DecodedImage? {
        guard let trim = options.trim, image.frames.count == 1 else { return image }
        guard let window = TrimFinder.window(in: image.bitmap, trim: trim, cancellation: cancellation) else {
            return cancellation?.isCancelled == true ? nil : image
        }
        guard let cut = window.transform(image.bitmap) else { return image }
        var result = image
        result.frames = [DecodedImage.Frame(bitmap: cut, duration: image.frames[0].duration)]
        result.sourceSize = PixelSize(width: cut.width, height: cut.height)
        return result
    }

    /// The size sizes are planned on: the source's full size when the decoder reduced it.
    public static func plannedSize(of image: DecodedImage) -> PixelSize {
        let stored = PixelSize(width: image.bitmap.width, height: image.bitmap.height)
        let source = image.sourceSize
        return source.width >= stored.width && source.height >= stored.height ? source : stored
    }

    private static func process(
        _ bitmap: Bitmap,
        orientation: ImageOrientation,
        geometry: ResizeGeometry,
        options: ProcessingOptions,
        cancellation: CodingCancellation?
    ) -> Bitmap? {
        func stopped() -> Bool { cancellation?.isCancelled == true }
        if stopped() { return nil }
        var current = turned(bitmap, orientation: orientation, options: options)
        // A bitmap decoded smaller than the source: the source crop in its pixels.
        let reducedCrop = PixelSize(
            width: max(1, reduced(geometry.cropped.width, by: current.width, of: geometry.source.width)),
            height: max(1, reduced(geometry.cropped.height, by: current.height, of: geometry.source.height))
        )
        // The source crop's own gravity, else the main one (imgproxy's rule); pixel offsets are
        // in source pixels, so they shrink with a bitmap decoded smaller.
        let sourcePlacement =
            options.crop?.gravity.map { Placement(gravity: $0, offset: options.cropGravityOffset) }
            ?? Placement(gravity: options.gravity, offset: options.gravityOffset)
        current = crop(
            current,
            to: reducedCrop,
            placement: sourcePlacement,
            offsetScale: Double(current.width) / Double(max(1, geometry.source.width))
        )
        if current.width != geometry.scaled.width || current.height != geometry.scaled.height {
            guard let resized = current.resized(to: geometry.scaled, cancellation: cancellation) else { return nil }
            current = resized
        }
        if stopped() { return nil }
        current = crop(
            current,
            to: geometry.resultCrop,
            placement: Placement(gravity: options.gravity, offset: options.gravityOffset),
            offsetScale: geometry.dprScale
        )
        guard let filtered = filtered(current, options: options, cancellation: cancellation) else { return nil }
        return laidOut(filtered, geometry: geometry, options: options)
    }

    /// The EXIF orientation, then `rotate`, then `flip` (imgproxy's order).
    private static func turned(_ bitmap: Bitmap, orientation: ImageOrientation, options: ProcessingOptions) -> Bitmap {
        var current = orientation == .up ? bitmap : bitmap.applyingOrientation(orientation)
        if options.rotate != 0, let turned = RotateTransformer(quarterTurns: options.rotate / 90).transform(current) {
            current = turned
        }
        switch (options.flipHorizontal, options.flipVertical) {
        case (true, true): current = current.applyingOrientation(.down)
        case (true, false): current = current.applyingOrientation(.upMirrored)
        case (false, true): current = current.applyingOrientation(.downMirrored)
        case (false, false): break
        }
        return current
    }

    /// Blur, sharpen and pixelate, on the result before it is extended (imgproxy's order).
    private static func filtered(
        _ bitmap: Bitmap,
        options: ProcessingOptions,
        cancellation: CodingCancellation?
    ) -> Bitmap? {
        var current = bitmap
        if options.blur > 0, let blurred = BlurTransformer(radius: boxRadius(options.blur)).transform(current) {
            current = blurred
        }
        if cancellation?.isCancelled == true { return nil }
        if options.sharpen > 0 { current = sharpened(current, sigma: options.sharpen) }
        if cancellation?.isCancelled == true { return nil }
        if options.pixelate > 1 { current = pixelated(current, block: options.pixelate) }
        return current
    }

    /// `extend` (or `extend_aspect_ratio`) to the planned output, then `padding`.
    private static func laidOut(_ bitmap: Bitmap, geometry: ResizeGeometry, options: ProcessingOptions) -> Bitmap {
        var current = bitmap
        if geometry.output != geometry.resultCrop {
            let placement =
                options.extend
                ? Placement(gravity: options.extendGravity, offset: options.extendGravityOffset)
                : Placement(gravity: options.extendAspectRatioGravity, offset: options.extendAspectRatioGravityOffset)
            current = padded(
                current,
                to: geometry.output,
                background: options.background,
                placement: placement,
                offsetScale: geometry.dprScale
            )
        }
        let bands = geometry.padding
        guard !bands.isEmpty else { return current }
        return padded(
            current,
            to: geometry.padded,
            background: options.background,
            at: (bands.left, bands.top)
        )
    }

    /// Blocks of `block` × `block` pixels, each the average of the pixels it covers (edge blocks
    /// repeat the last row and column, as libvips's copy-extended shrink that imgproxy uses).
    static func pixelated(_ bitmap: Bitmap, block: Int) -> Bitmap {
        var pixels = bitmap.pixels
        let width = bitmap.width
        let height = bitmap.height
        let area = block * block
        for top in stride(from: 0, to: height, by: block) {
            for left in stride(from: 0, to: width, by: block) {
                var sums = [Int](repeating: 0, count: 4)
                for y in top..<top + block {
                    let row = min(y, height - 1) * bitmap.bytesPerRow
                    for x in left..<left + block {
                        let offset = row + min(x, width - 1) * 4
                        for channel in 0..<4 { sums[channel] += Int(bitmap.pixels[offset + channel]) }
                    }
                }
                let average = sums.map { UInt8(($0 + area / 2) / area) }
                for y in top..<min(top + block, height) {
                    for x in left..<min(left + block, width) {
                        let offset = y * width * 4 + x * 4
                        for channel in 0..<4 { pixels[offset + channel] = average[channel] }
                    }
                }
            }
        }
        return Bitmap(width: width, height: height, hasAlpha: bitmap.hasAlpha, pixels: pixels)
    }

    /// `side × part / whole`, rounded as imgproxy rounds.
    private static func reduced(_ side: Int, by part: Int, of whole: Int) -> Int {
        ResizeGeometry.round(Double(side * part) / Double(whole))
    }

    /// Three box blurs of radius r approximate a Gaussian of sigma ≈ r.
    private static func boxRadius(_ sigma: Double) -> Int { max(1, Int(sigma.rounded())) }

    /// A gravity and its offsets.
    struct Placement {
        var gravity: ProxyGravity
        var offset = GravityOffset()
    }

    /// A `size` window of `bitmap` where `placement` puts it (the whole bitmap when it is no
    /// larger); pixel offsets are multiplied by `offsetScale`.
    static func crop(_ bitmap: Bitmap, to size: PixelSize, placement: Placement, offsetScale: Double = 1) -> Bitmap {
        let full = PixelSize(width: bitmap.width, height: bitmap.height)
        let cut = PixelSize(width: min(size.width, full.width), height: min(size.height, full.height))
        guard cut != full, cut.width > 0, cut.height > 0 else { return bitmap }
        let origin =
            placement.gravity == .smart
            ? SmartCrop.origin(of: cut, in: bitmap)
            : position(of: cut, in: full, placement: placement, offsetScale: offsetScale)
        return CropTransformer(x: origin.x, y: origin.y, width: cut.width, height: cut.height).transform(bitmap)
            ?? bitmap
    }

    /// Where an `inner` window goes in `outer`, by imgproxy's `calcPosition`: the gravity's
    /// edge or centre (halves rounded to even), a focus point's centre, then the offsets, kept
    /// inside `outer` (or, with `overflowing`, overlapping it by at least a pixel).
    static func position(
        of inner: PixelSize,
        in outer: PixelSize,
        placement: Placement,
        offsetScale: Double,
        overflowing: Bool = false
    ) -> (x: Int, y: Int) {
        let (left, top) = unclampedPosition(of: inner, in: outer, placement: placement, offsetScale: offsetScale)
        if overflowing {
            return (
                max(1 - inner.width, min(left, outer.width - 1)),
                max(1 - inner.height, min(top, outer.height - 1))
            )
        }
        return (
            max(0, min(left, outer.width - inner.width)),
            max(0, min(top, outer.height - inner.height))
        )
    }

    private static func unclampedPosition(
        of inner: PixelSize,
        in outer: PixelSize,
        placement: Placement,
        offsetScale: Double
    ) -> (x: Int, y: Int) {
        func toEven(_ value: Double) -> Int { ResizeGeometry.saturating(value.rounded(.toNearestOrEven)) }
        func scaled(_ side: Int, _ share: Double) -> Int { side == 0 ? 0 : toEven(Double(side) * share) }
        func offset(_ value: Double, side: Int) -> Int {
            abs(value) >= 1 ? toEven(value * offsetScale) : scaled(side, value)
        }
        var left: Int
        var top: Int
        if case .focusPoint(let x, let y) = placement.gravity {
            left = scaled(outer.width, x) - inner.width / 2
            top = scaled(outer.height, y) - inner.height / 2
        } else {
            let dx = offset(placement.offset.x, side: outer.width)
            let dy = offset(placement.offset.y, side: outer.height)
            left = toEven(Double(outer.width - inner.width + 1) / 2) + dx
            top = toEven(Double(outer.height - inner.height + 1) / 2) + dy
            switch placement.gravity {
            case .north, .northEast, .northWest: top = dy
            case .south, .southEast, .southWest: top = outer.height - inner.height - dy
            default: break
            }
            switch placement.gravity {
            case .west, .northWest, .southWest: left = dx
            case .east, .northEast, .southEast: left = outer.width - inner.width - dx
            default: break
            }
        }
        return (left, top)
    }

    /// `bitmap` on a `size` canvas of `background` (transparent when `nil`), where `placement`
    /// puts it (centred by default).
    static func padded(
        _ bitmap: Bitmap,
        to size: PixelSize,
        background: RGBA?,
        placement: Placement = Placement(gravity: .center),
        offsetScale: Double = 1
    ) -> Bitmap {
        let origin = position(
            of: PixelSize(width: min(bitmap.width, size.width), height: min(bitmap.height, size.height)),
            in: size,
            placement: placement,
            offsetScale: offsetScale
        )
        return padded(bitmap, to: size, background: background, at: origin)
    }

    /// `bitmap` on a `size` canvas of `background` (transparent when `nil`), its top-left corner
    /// at `origin`.
    static func padded(_ bitmap: Bitmap, to size: PixelSize, background: RGBA?, at origin: (x: Int, y: Int)) -> Bitmap {
        let fill = background ?? RGBA(r: 0, g: 0, b: 0, a: 0)
        var pixels = [UInt8](repeating: 0, count: size.width * size.height * 4)
        for index in 0..<size.width * size.height {
            pixels[index * 4] = fill.r
            pixels[index * 4 + 1] = fill.g
            pixels[index * 4 + 2] = fill.b
            pixels[index * 4 + 3] = fill.a
        }
        let (left, top) = origin
        let rowBytes = min(bitmap.width, size.width) * 4
        for y in 0..<min(bitmap.height, size.height) {
            let source = y * bitmap.bytesPerRow
            let target = ((top + y) * size.width + left) * 4
            pixels.replaceSubrange(target..<target + rowBytes, with: bitmap.pixels[source..<source + rowBytes])
        }
        return Bitmap(
            width: size.width,
            height: size.height,
            hasAlpha: bitmap.hasAlpha || fill.a < 255,
            pixels: pixels
        )
    }

    /// Unsharp mask: each colour channel plus its difference from a blur of `sigma`.
    static func sharpened(_ bitmap: Bitmap, sigma: Double) -> Bitmap {
        guard let blurred = BlurTransformer(radius: boxRadius(sigma)).transform(bitmap) else { return bitmap }
        var pixels = [UInt8](repeating: 0, count: bitmap.width * bitmap.height * 4)
        for y in 0..<bitmap.height {
            for x in 0..<bitmap.width {
                let original = y * bitmap.bytesPerRow + x * 4
                let soft = y * blurred.bytesPerRow + x * 4
                let target = (y * bitmap.width + x) * 4
                for channel in 0..<3 {
                    let value = 2 * Int(bitmap.pixels[original + channel]) - Int(blurred.pixels[soft + channel])
                    pixels[target + channel] = UInt8(clamping: value)
                }
                pixels[target + 3] = bitmap.pixels[original + 3]
            }
        }
        return Bitmap(width: bitmap.width, height: bitmap.height, hasAlpha: bitmap.hasAlpha, pixels: pixels)
    }
}

/// Content-aware crop placement: the window over the most detail (luma edges and colour),
/// found on a grid of at most 96×96 cells; ties go to the window nearest the centre.
enum SmartCrop {
    static func origin(of cut: PixelSize, in bitmap: Bitmap) -> (x: Int, y: Int) {
        let step = max(1, (max(bitmap.width, bitmap.height) + 95) / 96)
        let columns = (bitmap.width + step - 1) / step
        let rows = (bitmap.height + step - 1) / step
        // Mean luma and saturation per cell.
        var luma = [Double](repeating: 0, count: columns * rows)
        var saturation = [Double](repeating: 0, count: columns * rows)
        var counts = [Double](repeating: 0, count: columns * rows)
        for y in 0..<bitmap.height {
            for x in 0..<bitmap.width {
                let offset = y * bitmap.bytesPerRow + x * 4
                let (r, g, b) = (
                    Double(bitmap.pixels[offset]), Double(bitmap.pixels[offset + 1]), Double(bitmap.pixels[offset + 2])
                )
                let cell = (y / step) * columns + x / step
                luma[cell] += 0.299 * r + 0.587 * g + 0.114 * b
                saturation[cell] += max(r, g, b) - min(r, g, b)
                counts[cell] += 1
            }
        }
        // Energy: luma differences to the right and below neighbours, plus some saturation.
        var energy = [Double](repeating: 0, count: columns * rows)
        for row in 0..<rows {
            for column in 0..<columns {
                let index = row * columns + column
                let value = luma[index] / counts[index]
                var edge = 0.0
                if column + 1 < columns { edge += abs(value - luma[index + 1] / counts[index + 1]) }
                if row + 1 < rows { edge += abs(value - luma[index + columns] / counts[index + columns]) }
                energy[index] = edge + 0.25 * saturation[index] / counts[index]
            }
        }
        // Summed-area table, then the best window position in cells.
        var summed = [Double](repeating: 0, count: (columns + 1) * (rows + 1))
        for row in 0..<rows {
            for column in 0..<columns {
                summed[(row + 1) * (columns + 1) + column + 1] =
                    energy[row * columns + column] + summed[row * (columns + 1) + column + 1]
                    + summed[(row + 1) * (columns + 1) + column] - summed[row * (columns + 1) + column]
            }
        }
        let windowColumns = max(1, min(columns, cut.width / step))
        let windowRows = max(1, min(rows, cut.height / step))
        var best = (score: -1.0, distance: Double.infinity, column: 0, row: 0)
        let centre = (Double(columns - windowColumns) / 2, Double(rows - windowRows) / 2)
        for row in 0...(rows - windowRows) {
            for column in 0...(columns - windowColumns) {
                let (top, left, bottom, right) = (row, column, row + windowRows, column + windowColumns)
                let score =
                    summed[bottom * (columns + 1) + right] - summed[top * (columns + 1) + right]
                    - summed[bottom * (columns + 1) + left] + summed[top * (columns + 1) + left]
                let distance = abs(Double(column) - centre.0) + abs(Double(row) - centre.1)
                if score > best.score + 1e-9 || (abs(score - best.score) <= 1e-9 && distance < best.distance) {
                    best = (score, distance, column, row)
                }
            }
        }
        let x = min(max(0, best.column * step), bitmap.width - cut.width)
        let y = min(max(0, best.row * step), bitmap.height - cut.height)
        return (x, y)
    }
}
