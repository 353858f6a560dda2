import WebImageCoders

// Leading-dot names for the built-in transformers, for `ImageRequest.transformers` and any
// `some ImageTransformer` parameter: `[.resize(width: 200), .roundCorners(16)]`.

extension ImageTransformer where Self == ResizeTransformer {
    /// Resizes to `width` × `height` by `mode` (default `.fit`); a side left out (or 0) follows
    /// the aspect ratio. With both left out the transform fails.
    public static func resize(width: Int = 0, height: Int = 0, mode: ResizeTransformer.Mode = .fit) -> Self {
        ResizeTransformer(size: PixelSize(width: width, height: height), mode: mode)
    }

    /// Resizes to `size` by `mode` (default `.fit`); `.fill` keeps the `gravity` side.
    public static func resize(
        to size: PixelSize,
        mode: ResizeTransformer.Mode = .fit,
        gravity: ImageGravity = .center
    ) -> Self {
        ResizeTransformer(size: size, mode: mode, gravity: gravity)
    }
}

extension ImageTransformer where Self == RoundCornerTransformer {
    /// Transparent, anti-aliased corners of `radius` pixels.
    public static func roundCorners(_ radius: Double) -> Self { RoundCornerTransformer(radius: radius) }
}

extension ImageTransformer where Self == CropTransformer {
    /// Crops the rectangle at (`x`, `y`) of `width` × `height`.
    public static func crop(x: Int, y: Int, width: Int, height: Int) -> Self {
        CropTransformer(x: x, y: y, width: width, height: height)
    }

    /// Crops `width` × `height` anchored at `gravity`.
    public static func crop(width: Int, height: Int, gravity: ImageGravity) -> Self {
        CropTransformer(width: width, height: height, gravity: gravity)
    }
}

extension ImageTransformer where Self == BlurTransformer {
    /// A Gaussian-like blur of `radius` pixels.
    public static func blur(radius: Int) -> Self { BlurTransformer(radius: radius) }
}

extension ImageTransformer where Self == GrayscaleTransformer {
    /// Grey levels only.
    public static var grayscale: Self { GrayscaleTransformer() }
}

extension ImageTransformer where Self == RotateTransformer {
    /// Rotates by quarter turns clockwise.
    public static func rotate(quarterTurns: Int) -> Self { RotateTransformer(quarterTurns: quarterTurns) }
}

extension ImageTransformer where Self == FlipTransformer {
    /// Mirrors left-right (`horizontal`) and/or top-bottom (`vertical`).
    public static func flip(horizontal: Bool = true, vertical: Bool = false) -> Self {
        FlipTransformer(horizontal: horizontal, vertical: vertical)
    }
}

extension ImageTransformer where Self == TintTransformer {
    /// Blends `color` over the image by `fraction` (default 0.5).
    public static func tint(_ color: RGBA, fraction: Double = 0.5) -> Self {
        TintTransformer(color: color, fraction: fraction)
    }
}
