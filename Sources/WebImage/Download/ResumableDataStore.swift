import Foundation
@_spi(WebImageInternals) import WebImageCoders

/// Bytes of downloads that stopped part-way (cancelled, or failed without a retry left), kept a
/// while so the next download of the same URL continues with `Range`/`If-Range` instead of
/// starting over (Nuke's resumable data). Bounded in bytes; oldest entries go first, and an entry
/// is used at most once. Thread-safe.
public final class ResumableDataStore: Sendable {
    /// The most bytes kept. Default 32 MiB.
    public let byteLimit: Int
    /// How long an entry stays usable. Default 10 minutes.
    public let lifetime: Duration

    private struct Entry {
        var partial: DownloadOperation.PartialBody
        var storedAt: ContinuousClock.Instant
    }

    private let entries = Protected<[(url: URL, entry: Entry)]>([])

    /// A store of at most `byteLimit` bytes whose entries last `lifetime`.
    public init(byteLimit: Int = 32 << 20, lifetime: Duration = .seconds(600)) {
        self.byteLimit = byteLimit
        self.lifetime = lifetime
    }

    /// Keeps `partial` for `url`, replacing an older one, dropping the oldest entries past the limit.
    func store(_ partial: DownloadOperation.PartialBody, for url: URL) {
        guard partial.data.count <= byteLimit else { return }
        let now = ContinuousClock.now
        entries.withLock { entries in
            entries.removeAll { $0.url == url || now - $0.entry.storedAt > lifetime }
            entries.append((url, Entry(partial: partial, storedAt: now)))
            var total = entries.reduce(0) { $0 + $1.entry.partial.data.count }
            while total > byteLimit, let oldest = entries.first {
                total -= oldest.entry.partial.data.count
                entries.removeFirst()
            }
        }
    }

    /// The kept bytes for `url`, taken out of the store; `nil` when none (or too old).
    func take(_ url: URL) -> DownloadOperation.PartialBody? {
        let now = ContinuousClock.now
        return entries.withLock { entries in
            guard let index = entries.firstIndex(where: { $0.url == url }) else { return nil }
            let entry = entries.remove(at: index).entry
            return now - entry.storedAt <= lifetime ? entry.partial : nil
        }
    }

    /// Bytes kept now.
    public var byteCount: Int { entries.withLock { $0.reduce(0) { $0 + $1.entry.partial.data.count } } }
}
