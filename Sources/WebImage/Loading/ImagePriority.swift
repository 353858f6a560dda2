/// How soon a waiting load starts, relative to the others (Nuke's `ImageRequest.Priority`).
///
/// A download shared by several callers runs at the highest priority any of them still asks for.
/// The SDWebImage flags map onto it: ``ImageOptions/highPriority`` is `.high`,
/// ``ImageOptions/lowPriority`` is `.low`, neither is `.normal`.
public enum ImagePriority: Int, Sendable, Hashable, Comparable, CaseIterable {
    case veryLow = -2
    case low = -1
    case normal = 0
    case high = 1
    case veryHigh = 2

    /// `.high` for ``ImageOptions/highPriority``, `.low` for ``ImageOptions/lowPriority``, else `.normal`.
    public init(_ options: ImageOptions) {
        self = options.contains(.highPriority) ? .high : options.contains(.lowPriority) ? .low : .normal
    }

    public static func < (lhs: ImagePriority, rhs: ImagePriority) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The SDWebImage flag for this priority (none for `.normal`).
    var options: ImageOptions {
        switch self {
        case .veryLow, .low: .lowPriority
        case .normal: []
        case .high, .veryHigh: .highPriority
        }
    }
}
