import CJXL
import Foundation

/// How far an encoded result's pixels are from the pixels it was encoded from: the measures
/// ``AutoQuality`` searches on. Both take two bitmaps of the same size; translucent pixels are
/// seen over mid grey. Pure functions, safe from any thread; they allocate a few planes the
/// size of the image and run on the calling thread.
public enum ImageDifference {
    /// Structural dissimilarity, `1 / SSIM − 1` (0: identical), in the manner of Kornel
    /// Lesiński's `dssim`: SSIM computed in CIE L\*a\*b\* (chroma weighted half), at five
    /// scales made in linear light, weighted towards the middle ones. Our own implementation,
    /// scaled by ``dssimScale`` so that imgproxy's default autoquality target, 0.02, is about the
    /// look of JPEG at quality 80 on photos (SSIMULACRA2 about 75 on scikit-image's photos at
    /// 512 px; Benchmarks/best-format.sh).
    /// - Throws: ``CoderError/invalidArgument(_:)`` when the sizes differ or a side is empty.
    public static func dssim(_ reference: Bitmap, _ distorted: Bitmap) throws(CoderError) -> Double {
        try checkSizes(reference, distorted)
        var first = LinearPlanes(reference)
        var second = LinearPlanes(distorted)
        var weighted = 0.0
        var weights = 0.0
        for weight in [0.028, 0.197, 0.322, 0.298, 0.155] {
            guard first.width >= 8, first.height >= 8 else { break }
            weighted += weight * SSIM.lab(first, second)
            weights += weight
            first = first.halved()
            second = second.halved()
        }
        if weights == 0 { weighted = SSIM.lab(first, second) } else { weighted /= weights }
        return weighted > 0 ? dssimScale * (1 / weighted - 1) : .infinity
    }

    /// What `1 / SSIM − 1` is multiplied by in ``dssim(_:_:)``: its raw value at JPEG quality 80
    /// on photos is about 0.008.
    public static let dssimScale = 2.5

    /// libjxl's Butteraugli distance (3-norm over the image; about 1 is the threshold of a
    /// visible difference, higher is worse), with intensity target 80 nits as `cjxl` uses.
    /// About ten times the cost of ``dssim(_:_:)``.
    /// - Throws: ``CoderError/invalidArgument(_:)`` when the sizes differ or a side is empty;
    ///   `outOfMemory` when libjxl cannot compute it.
    public static func butteraugli(_ reference: Bitmap, _ distorted: Bitmap) throws(CoderError) -> Double {
        try checkSizes(reference, distorted)
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

/// Three planes of linear-light RGB, translucent pixels composed over mid grey.
private struct LinearPlanes {
    let width: Int
    let height: Int
    var red: [Float]
    var green: [Float]
    var blue: [Float]

    private static let toLinear: [Float] = (0..<256).map { level in
        let value = Float(level) / 255
        return value <= 0.04045 ? value / 12.92 : powf((value + 0.055) / 1.055, 2.4)
    }

    init(width: Int, height: Int, red: [Float], green: [Float], blue: [Float]) {
        self.width = width
        self.height = height
        self.red = red
        self.green = green
        self.blue = blue
    }

    init(_ bitmap: Bitmap) {
        let count = bitmap.width * bitmap.height
        var red = [Float](repeating: 0, count: count)
        var green = red
        var blue = red
        Self.toLinear.withUnsafeBufferPointer { table in
            let grey = table[128]
            bitmap.pixels.withUnsafeBufferPointer { pixels in
                red.withUnsafeMutableBufferPointer { red in
                    green.withUnsafeMutableBufferPointer { green in
                        blue.withUnsafeMutableBufferPointer { blue in
                            for y in 0..<bitmap.height {
                                var from = y * bitmap.bytesPerRow
                                for index in y * bitmap.width..<(y + 1) * bitmap.width {
                                    let alpha = Float(pixels[from + 3]) * (1 / 255)
                                    let under = grey * (1 - alpha)
                                    red[index] = table[Int(pixels[from])] * alpha + under
                                    green[index] = table[Int(pixels[from + 1])] * alpha + under
                                    blue[index] = table[Int(pixels[from + 2])] * alpha + under
                                    from += 4
                                }
                            }
                        }
                    }
                }
            }
        }
        self.init(width: bitmap.width, height: bitmap.height, red: red, green: green, blue: blue)
    }

    /// Half the size (rounded down), each pixel the mean of a 2×2 block.
    func halved() -> LinearPlanes {
        let width = self.width / 2
        let height = self.height / 2
        func half(_ plane: [Float]) -> [Float] {
            var result = [Float](repeating: 0, count: width * height)
            plane.withUnsafeBufferPointer { plane in
                result.withUnsafeMutableBufferPointer { result in
                    for y in 0..<height {
                        for x in 0..<width {
                            let top = 2 * y * self.width + 2 * x
                            let bottom = top + self.width
                            result[y * width + x] =
                                (plane[top] + plane[top + 1] + plane[bottom] + plane[bottom + 1]) * 0.25
                        }
                    }
                }
            }
            return result
        }
        return LinearPlanes(width: width, height: height, red: half(red), green: half(green), blue: half(blue))
    }

    /// CIE L\*a\*b\* (D65) planes scaled to about 0…1: L/100, a/220 and b/220 about 0.5.
    func lab() -> (l: [Float], a: [Float], b: [Float]) {
        let count = width * height
        var l = [Float](repeating: 0, count: count)
        var a = l
        var b = l
        func f(_ t: Float) -> Float { t > 0.008856 ? cbrtf(t) : 7.787 * t + 16 / 116 }
        red.withUnsafeBufferPointer { red in
            green.withUnsafeBufferPointer { green in
                blue.withUnsafeBufferPointer { blue in
                    l.withUnsafeMutableBufferPointer { l in
                        a.withUnsafeMutableBufferPointer { a in
                            b.withUnsafeMutableBufferPointer { b in
                                for index in 0..<count {
                                    let (r, g, bl) = (red[index], green[index], blue[index])
                                    let fx = f((0.4124 * r + 0.3576 * g + 0.1805 * bl) * (1 / 0.95047))
                                    let fy = f(0.2126 * r + 0.7152 * g + 0.0722 * bl)
                                    let fz = f((0.0193 * r + 0.1192 * g + 0.9505 * bl) * (1 / 1.08883))
                                    l[index] = (116 * fy - 16) * 0.01
                                    a[index] = 500 * (fx - fy) * (1 / 220) + 0.5
                                    b[index] = 200 * (fy - fz) * (1 / 220) + 0.5
                                }
                            }
                        }
                    }
                }
            }
        }
        return (l, a, b)
    }
}

/// Mean SSIM over a plane pair, windows of about σ 1.5 (two box blurs of radius 2).
private enum SSIM {
    /// L\*, a\* and b\*'s SSIM at one scale, chroma weighted half.
    static func lab(_ first: LinearPlanes, _ second: LinearPlanes) -> Double {
        let one = first.lab()
        let two = second.lab()
        let (width, height) = (first.width, first.height)
        let luma = mean(one.l, two.l, width: width, height: height)
        let chroma =
            mean(one.a, two.a, width: width, height: height) + mean(one.b, two.b, width: width, height: height)
        return (luma + 0.25 * chroma) / 1.5
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
