/// A width × height grid of 8-bit RGBA pixels: four bytes per pixel in R, G, B, A order, rows
/// top to bottom, `bytesPerRow` bytes apart (always `width * 4` for bitmaps this library makes).
///
/// Alpha is **straight** (not premultiplied): an opaque image has every A byte at 255, and the
/// colour bytes of a translucent pixel are its full colour. Bitmaps are values (copy on write)
/// and `Sendable`.
public struct Bitmap: Sendable, Hashable {
    /// Width in pixels, at least 1.
    public let width: Int
    /// Height in pixels, at least 1.
    public let height: Int
    /// Distance in bytes from one row to the next.
    public let bytesPerRow: Int
    /// Whether the source may have non-opaque pixels (an alpha channel or a transparent colour).
    /// `false` guarantees every alpha byte is 255.
    public var hasAlpha: Bool
    /// The pixel bytes, `bytesPerRow * height` of them.
    public package(set) var pixels: [UInt8]

    /// Wraps existing RGBA bytes.
    /// - Precondition: `pixels.count >= bytesPerRow * height` and `bytesPerRow >= width * 4`.
    public init(width: Int, height: Int, bytesPerRow: Int? = nil, hasAlpha: Bool = true, pixels: [UInt8]) {
        let stride = bytesPerRow ?? width * 4
        precondition(width > 0 && height > 0, "a bitmap needs a positive size, got \(width)×\(height)")
        precondition(stride >= width * 4 && pixels.count >= stride * height, "pixel buffer too small")
        self.width = width
        self.height = height
        self.bytesPerRow = stride
        self.hasAlpha = hasAlpha
        self.pixels = pixels
    }

    /// A bitmap filled with one colour (transparent black by default).
    public init(width: Int, height: Int, fill: RGBA = RGBA(r: 0, g: 0, b: 0, a: 0)) {
        precondition(width > 0 && height > 0, "a bitmap needs a positive size, got \(width)×\(height)")
        self.width = width
        self.height = height
        self.bytesPerRow = width * 4
        self.hasAlpha = fill.a != 255
        if fill == RGBA(r: 0, g: 0, b: 0, a: 0) {
            self.pixels = [UInt8](repeating: 0, count: width * height * 4)
        } else {
            var pixels = [UInt8]()
            pixels.reserveCapacity(width * height * 4)
            for _ in 0..<width * height { pixels.append(contentsOf: [fill.r, fill.g, fill.b, fill.a]) }
            self.pixels = pixels
        }
    }

    /// Makes a bitmap whose bytes `fill` writes, without zeroing them first. `fill` receives a
    /// buffer of `width * 4 * height` bytes and must initialise all of them.
    init(
        width: Int,
        height: Int,
        hasAlpha: Bool,
        uninitializedFill fill: (UnsafeMutableBufferPointer<UInt8>) throws(CoderError) -> Void
    ) throws(CoderError) {
        let count = width * height * 4
        var failure: CoderError?
        let pixels = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            do throws(CoderError) {
                try fill(buffer)
                initialized = count
            } catch {
                failure = error
                initialized = 0
            }
        }
        if let failure { throw failure }
        self.width = width
        self.height = height
        self.bytesPerRow = width * 4
        self.hasAlpha = hasAlpha
        self.pixels = pixels
    }

    /// Bytes the pixels occupy: what a memory cache should charge.
    public var byteCount: Int { bytesPerRow * height }

    /// The pixel at (`x`, `y`), origin top left.
    public subscript(x: Int, y: Int) -> RGBA {
        get {
            let offset = y * bytesPerRow + x * 4
            return RGBA(r: pixels[offset], g: pixels[offset + 1], b: pixels[offset + 2], a: pixels[offset + 3])
        }
        set {
            let offset = y * bytesPerRow + x * 4
            pixels[offset] = newValue.r
            pixels[offset + 1] = newValue.g
            pixels[offset + 2] = newValue.b
            pixels[offset + 3] = newValue.a
        }
    }

    /// Whether any pixel is not fully opaque (reads every alpha byte).
    public var containsTransparency: Bool {
        pixels.withUnsafeBufferPointer { buffer in
            for y in 0..<height {
                var offset = y * bytesPerRow + 3
                for _ in 0..<width {
                    if buffer[offset] != 255 { return true }
                    offset += 4
                }
            }
            return false
        }
    }
}

/// One 8-bit RGBA pixel with straight alpha.
public struct RGBA: Sendable, Hashable, CustomStringConvertible {
    public var r: UInt8
    public var g: UInt8
    public var b: UInt8
    public var a: UInt8

    public init(r: UInt8, g: UInt8, b: UInt8, a: UInt8 = 255) {
        self.r = r
        self.g = g
        self.b = b
        self.a = a
    }

    public var description: String { "RGBA(\(r), \(g), \(b), \(a))" }
}
