import CJXL
import CWebImageShims
import Foundation

/// How far an encoded result's pixels are from the pixels it was encoded from: the measures
/// ``AutoQuality`` searches on. Both take two bitmaps of the same size; translucent pixels are
/// seen over mid grey. Pure functions, safe from any thread; they allocate a few planes the
/// size of the image and run on the calling thread.
public enum ImageDifference {
    /// Structural dissimilarity, `1 / SSIM − 1` (0: identical), in the manner of Kornel
    /// Lesiński's `dssim`: SSIM of CIE L\* at five scales made in linear light, weighted towards
    /// the middle ones. Our own implementation, scaled by ``dssimScale`` so that imgproxy's
    /// default autoquality target, 0.02, is about the look of JPEG at quality 80 on photos
    /// (SSIMULACRA2 about 75.3 on scikit-image's photos at 512 px; Benchmarks/best-format.sh).
    /// Lightness alone: SSIM of a\* and b\* ranks photos against SSIMULACRA2 worse than
    /// none (it spends bytes on the colour noise of a star field, and few on faces).
    /// - Throws: ``CoderError/invalidArgument(_:)`` when the sizes differ or a side is empty.
    public static func dssim(_ reference: Bitmap, _ distorted: Bitmap) throws(CoderError) -> Double {
        try checkSizes(reference, distorted)
        var first = LuminancePlane(reference)
        var second = LuminancePlane(distorted)
        var weighted = 0.0
        var weights = 0.0
        for weight in [0.028, 0.197, 0.322, 0.298, 0.155] {
            guard first.width >= 8, first.height >= 8 else { break }
            weighted += weight * SSIM.lightness(first, second)
            weights += weight
            first = first.halved()
            second = second.halved()
        }
        if weights == 0 { weighted = SSIM.lightness(first, second) } else { weighted /= weights }
        return weighted > 0 ? dssimScale * (1 / weighted - 1) : .infinity
    }

    /// What `1 / SSIM − 1` is multiplied by in ``dssim(_:_:)``: its raw value at the look of
    /// JPEG quality 80 on photos is about 0.003.
    public static let dssimScale = 6.45

    /// libjxl's Butteraugli distance (3-norm over the image; about 1 is the threshold of a
    /// visible difference, higher is worse), with intensity target 80 nits as `cjxl` uses.
    /// About ten times the cost of ``dssim(_:_:)``.
    /// - Throws: ``CoderError/invalidArgument(_:)`` when the sizes differ or a side is empty;
    ///   `outOfMemory` when libjxl cannot compute it.
    public static func butteraugli(_ reference: Bitmap, _ distorted: Bitmap) throws(CoderError) -> Double {
        try checkSizes(reference, distorted)
        try WI_LIBRARY_JXL.requireForEncoding(.jxl)
        guard let api = JxlButteraugliApiCreate(nil) else { throw .outOfMemory(.jxl, "cannot create Butteraugli") }
        defer { JxlButteraugliApiDestroy(api) }
        var format = JxlPixelFormat(num_channels: 3, data_type: JXL_TYPE_UINT8, endianness: JXL_NATIVE_ENDIAN, align: 0)
        let first = Self.opaqueRGB(reference)
        let second = Self.opaqueRGB(distorted)
        let result = first.withUnsafeBytes { one in
            second.withUnsafeBytes { two in
                JxlButteraugliCompute(
                    api,
                    UInt32(reference.width),
                    UInt32(reference.height),
                    &format,
                    one.baseAddress,
                    one.count,
                    &format,
                    two.baseAddress,
                    two.count
                )
            }
        }
        guard let result else { throw .outOfMemory(.jxl, "Butteraugli could not compare the images") }
        defer { JxlButteraugliResultDestroy(result) }
        return Double(JxlButteraugliResultGetDistance(result, 3))
    }

    private static func checkSizes(_ reference: Bitmap, _ distorted: Bitmap) throws(CoderError) {
        guard reference.width == distorted.width, reference.height == distorted.height else {
            throw .invalidArgument(
                "cannot compare a \(reference.width)×\(reference.height) image with a \(distorted.width)×\(distorted.height) one"
            )
        }
        guard reference.width > 0, reference.height > 0 else { throw .invalidArgument("cannot compare empty images") }
    }

    /// RGB bytes, rows packed, translucent pixels over mid grey (in sRGB values).
    private static func opaqueRGB(_ bitmap: Bitmap) -> [UInt8] {
        var rgb = [UInt8](repeating: 0, count: bitmap.width * bitmap.height * 3)
        bitmap.pixels.withUnsafeBufferPointer { source in
            for y in 0..<bitmap.height {
                for x in 0..<bitmap.width {
                    let from = y * bitmap.bytesPerRow + x * 4
                    let alpha = Int(source[from + 3])
                    for channel in 0..<3 {
                        let value = Int(source[from + channel])
                        rgb[(y * bitmap.width + x) * 3 + channel] = UInt8(
                            (value * alpha + 128 * (255 - alpha) + 127) / 255
                        )
                    }
                }
            }
        }
        return rgb
    }
}

/// The relative luminance (linear light) of a bitmap, translucent pixels composed over mid grey.
private struct LuminancePlane {
    let width: Int
    let height: Int
    var luminance: [Float]

    private static let toLinear: [Float] = (0..<256).map { level in
        let value = Float(level) / 255
        return value <= 0.04045 ? value / 12.92 : powf((value + 0.055) / 1.055, 2.4)
    }

    init(width: Int, height: Int, luminance: [Float]) {
        self.width = width
        self.height = height
        self.luminance = luminance
    }

    init(_ bitmap: Bitmap) {
        var luminance = [Float](repeating: 0, count: bitmap.width * bitmap.height)
        Self.toLinear.withUnsafeBufferPointer { table in
            let grey = table[128]
            bitmap.pixels.withUnsafeBufferPointer { pixels in
                luminance.withUnsafeMutableBufferPointer { luminance in
                    for y in 0..<bitmap.height {
                        var from = y * bitmap.bytesPerRow
                        for index in y * bitmap.width..<(y + 1) * bitmap.width {
                            let alpha = Float(pixels[from + 3]) * (1 / 255)
                            let colour =
                                0.2126 * table[Int(pixels[from])] + 0.7152 * table[Int(pixels[from + 1])]
                                + 0.0722 * table[Int(pixels[from + 2])]
                            luminance[index] = colour * alpha + grey * (1 - alpha)
                            from += 4
                        }
                    }
                }
            }
        }
        self.init(width: bitmap.width, height: bitmap.height, luminance: luminance)
    }

    /// Half the size (rounded down), each pixel the mean of a 2×2 block.
    func halved() -> LuminancePlane {
        let width = self.width / 2
        let height = self.height / 2
        var result = [Float](repeating: 0, count: width * height)
        luminance.withUnsafeBufferPointer { plane in
            result.withUnsafeMutableBufferPointer { result in
                for y in 0..<height {
                    for x in 0..<width {
                        let top = 2 * y * self.width + 2 * x
                        let bottom = top + self.width
                        result[y * width + x] = (plane[top] + plane[top + 1] + plane[bottom] + plane[bottom + 1]) * 0.25
                    }
                }
            }
        }
        return LuminancePlane(width: width, height: height, luminance: result)
    }

    /// CIE L\* (D65), scaled to 0…1.
    func lightness() -> [Float] {
        luminance.map { value in
            (116 * (value > 0.008856 ? cbrtf(value) : 7.787 * value + 16 / 116) - 16) * 0.01
        }
    }
}

/// Mean SSIM over a plane pair, windows of about σ 1.5 (two box blurs of radius 2).
private enum SSIM {
    /// L\*'s SSIM at one scale.
    static func lightness(_ first: LuminancePlane, _ second: LuminancePlane) -> Double {
        mean(first.lightness(), second.lightness(), width: first.width, height: first.height)
    }

    static func mean(_ x: [Float], _ y: [Float], width: Int, height: Int) -> Double {
        let count = width * height
        var xx = [Float](repeating: 0, count: count)
        var yy = xx
        var xy = xx
        x.withUnsafeBufferPointer { x in
            y.withUnsafeBufferPointer { y in
                for index in 0..<count {
                    xx[index] = x[index] * x[index]
                    yy[index] = y[index] * y[index]
                    xy[index] = x[index] * y[index]
                }
            }
        }
        let planes = [x, y, xx, yy, xy].map { blurred($0, width: width, height: height) }
        let c1: Float = 0.01 * 0.01
        let c2: Float = 0.03 * 0.03
        var sum = 0.0
        planes[0].withUnsafeBufferPointer { mux in
            planes[1].withUnsafeBufferPointer { muy in
                planes[2].withUnsafeBufferPointer { exx in
                    planes[3].withUnsafeBufferPointer { eyy in
                        planes[4].withUnsafeBufferPointer { exy in
                            for row in 0..<height {
                                var rowSum: Float = 0
                                for index in row * width..<(row + 1) * width {
                                    let (mx, my) = (mux[index], muy[index])
                                    let covariance = exy[index] - mx * my
                                    let variances = exx[index] - mx * mx + eyy[index] - my * my
                                    rowSum +=
                                        (2 * mx * my + c1) * (2 * covariance + c2)
                                        / ((mx * mx + my * my + c1) * (variances + c2))
                                }
                                sum += Double(rowSum)
                            }
                        }
                    }
                }
            }
        }
        return sum / Double(count)
    }

    /// Two passes of a (2r+1)-wide box blur each way, edges clamped.
    static func blurred(_ plane: [Float], width: Int, height: Int) -> [Float] {
        var result = plane
        var scratch = plane
        for _ in 0..<2 {
            boxPass(result, into: &scratch, count: width, lines: height, step: 1, lineStep: width)
            boxPass(scratch, into: &result, count: height, lines: width, step: width, lineStep: 1)
        }
        return result
    }

    /// A running-sum box blur of radius 2 along lines of `count` samples `step` apart.
    private static func boxPass(
        _ source: [Float],
        into target: inout [Float],
        count: Int,
        lines: Int,
        step: Int,
        lineStep: Int
    ) {
        let radius = 2
        let scale = 1 / Float(2 * radius + 1)
        source.withUnsafeBufferPointer { source in
            target.withUnsafeMutableBufferPointer { target in
                for line in 0..<lines {
                    let base = line * lineStep
                    let last = count - 1
                    var sum: Float = 0
                    for index in -radius...radius { sum += source[base + min(max(index, 0), last) * step] }
                    for index in 0..<count {
                        target[base + index * step] = sum * scale
                        sum +=
                            source[base + min(index + radius + 1, last) * step]
                            - source[base + max(index - radius, 0) * step]
                    }
                }
            }
        }
    }
}
