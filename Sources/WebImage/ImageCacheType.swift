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
