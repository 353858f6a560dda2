import WebImage
import WebImageCoders

/// Decoded sources kept in memory for the next variant of the same original: a cluster routes
/// every size of one source to one node, and decoding (JPEG's entropy decoding above all) is
/// most of a cold request's time.
///
/// An entry is found only by a request whose decode would give the very same pixels: the key is
/// the source's URL and fingerprint, the size the decoder produces (JPEG's DCT scale, known from
/// the header before decoding), the frame options, the colour policy and whether EXIF is kept.
/// So a result never depends on what the cache held: the same URL gives the same bytes, and its
/// entity tag stays honest.
///
/// Least recently used entries go first past ``budget`` bytes (frames' pixels); an image larger
/// than a quarter of the budget is not kept; near a cgroup memory limit it is purged to its
/// watermark (``MemoryPressureMonitor``). Thread-safe; nothing is called out under its locks.
final class DecodedSourceCache: Sendable {
    /// Identifies one decode of one source.
    struct Key: Sendable {
        /// The source's URL as well as its bytes' fingerprint: XXH64 is not collision-resistant,
        /// and a source crafted to collide with another must not answer for that one's URL.
        var sourceURL: String
        var sourceFingerprint: String
        var decodedSize: PixelSize
        var firstFrameOnly: Bool
        var maxFrameCount: Int
        /// Converted, kept or ignored profiles give different pixels; EXIF read or not, different images.
        var colorPolicy: ColorPolicy
        var keepsMetadata: Bool
        /// An embedded thumbnail decoded instead of the image (`enforce_thumbnail`).
        var embeddedThumbnail = false

        var string: String {
            "\(sourceURL)\n\(sourceFingerprint) \(decodedSize.width)x\(decodedSize.height) \(firstFrameOnly ? 1 : 0) "
                + "\(maxFrameCount) \(colorPolicy.rawValue) \(keepsMetadata ? 1 : 0) \(embeddedThumbnail ? 1 : 0)"
        }
    }

    /// The most bytes of pixels kept.
    let budget: Int
    private let images: MemoryCache

    /// A cache of at most `budget` bytes; `nil` when the budget is 0 or less (no cache).
    init?(budget: Int) {
        guard budget > 0 else { return nil }
        self.budget = budget
        // Purge only a little past the limit: entries are a few MB each and a deep purge would
        // throw away decodes the next requests want.
        images = MemoryCache(
            limits: MemoryCache.Limits(costLimit: budget, costAfterPurge: budget / 10 * 9),
            keepsEvictedImagesInUse: false
        )
        // Under a cgroup memory limit it is purged with the other memory caches near the limit.
        MemoryPressureMonitor.shared.watch(images)
    }

    /// The decode stored for `key`, marked as recently used.
    func image(for key: Key) -> DecodedImage? { images.image(forKey: key.string) }

    /// Keeps `image` for `key` unless it would take more than a quarter of the budget.
    func store(_ image: DecodedImage, for key: Key) {
        guard image.cost <= budget / 4 else { return }
        images.setImage(image, forKey: key.string, cost: image.cost)
    }

    /// Bytes held now.
    var cost: Int { images.totalCost }
}
