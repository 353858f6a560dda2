/// Where an image came from (SDImageCacheType).
public enum ImageCacheType: String, Sendable, Hashable, CaseIterable {
    /// Not from a cache: downloaded (or not found).
    case none
    /// From the disk cache.
    case disk
    /// From the memory cache.
    case memory
    /// Both caches (for queries and stores).
    case all
}

extension ImageCacheType {
    /// Whether this type covers the memory cache (`.memory` or `.all`).
    public var includesMemory: Bool { self == .memory || self == .all }
    /// Whether this type covers the disk cache (`.disk` or `.all`).
    public var includesDisk: Bool { self == .disk || self == .all }
}
