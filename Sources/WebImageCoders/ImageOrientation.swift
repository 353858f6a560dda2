/// EXIF orientation (TIFF tag 274): how stored pixels must be turned to display upright.
public enum ImageOrientation: Int, Sendable, Hashable, CaseIterable, Codable {
    /// 1: as stored.
    case up = 1
    /// 2: mirrored left to right.
    case upMirrored = 2
    /// 3: rotated 180°.
    case down = 3
    /// 4: mirrored top to bottom.
    case downMirrored = 4
    /// 5: mirrored along the top-left/bottom-right diagonal (transposed).
    case leftMirrored = 5
    /// 6: stored rotated 90° counter-clockwise; display rotates 90° clockwise.
    case right = 6
    /// 7: mirrored along the top-right/bottom-left diagonal (transversed).
    case rightMirrored = 7
    /// 8: stored rotated 90° clockwise; display rotates 90° counter-clockwise.
    case left = 8

    /// Whether showing the image swaps its width and height.
    public var swapsDimensions: Bool { rawValue >= 5 }
}
