import Foundation
import Testing
import WebImage
import WebImageTestSupport

/// A clock tests move by hand.
final class TestClock: Sendable {
    private let current = Locked(Date(timeIntervalSince1970: 1_800_000_000))
    var now: Date { current.value }
    func advance(days: Double) { current.withLock { $0 += days * 86_400 } }
    var provider: @Sendable () -> Date { { self.now } }
}

@Suite("DiskCache")
struct DiskCacheTests {
    @Test(
        "Any key maps to one safe file inside the folder and round-trips with its metadata",
        arguments: [
            "https://example.com/a/b/photo.JPG?size=large&x=1#frag", "../../../etc/passwd", "/absolute/path.png",
            "ünïcødé/画像.webp", "..", ".", "", String(repeating: "k/../", count: 2048), "a\u{0}b", "no-extension",
        ]
    )
    func keys(key: String) throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let cache = DiskCache(directory: folder.url.appendingPathComponent("ns"))
        let data = Data("bytes for \(key.prefix(40))".utf8)
        let metadata = DiskCacheMetadata(
            contentType: "image/png",
            etag: "\"v1\"",
            lastModified: "Wed, 21 Oct 2015 07:28:00 GMT",
            extendedData: Data([0, 1, 2, 255])
        )
        try cache.store(data, forKey: key, metadata: metadata)
        let files = try FileManager.default.contentsOfDirectory(atPath: cache.directory.path)
        #expect(files == [DiskCache.fileName(forKey: key)])
        #expect(cache.fileURL(forKey: key).deletingLastPathComponent().path == cache.directory.path)
        #expect(files[0].count <= 64 + 9)
        #expect(cache.data(forKey: key) == data)
        let entry = try #require(cache.dataAndEntry(forKey: key))
        #expect(entry.data == data)
        #expect(entry.entry.key == key)
        #expect(entry.entry.metadata == metadata)
        #expect(cache.entry(forKey: key)?.metadata == metadata)
        #expect(cache.contains(key))
        cache.remove(forKey: key)
        #expect(!cache.contains(key))
        #expect(cache.data(forKey: key) == nil)
    }

    @Test("The file keeps the key's extension; the image bytes come first so the file opens as an image")
    func fileLayout() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let cache = DiskCache(directory: folder.url)
        #expect(DiskCache.fileName(forKey: "https://x/y/z.PNG?q=1").hasSuffix(".png"))
        #expect(!DiskCache.fileName(forKey: "https://x/y/z.toolongextension").contains("."))
        let png = try PNGCoder().encode(
            DecodedImage(bitmap: GeneratedImages.gradient(width: 8, height: 8), format: .png),
            as: .png,
            options: .init()
        )
        try cache.store(png, forKey: "https://x/y/z.png")
        let raw = try Data(contentsOf: cache.fileURL(forKey: "https://x/y/z.png"))
        #expect(raw.prefix(png.count) == png)
        #expect(try ImageCodersManager.shared.decode(raw).width == 8)
    }

    @Test("Damaged, truncated and foreign files read as absent, never as wrong bytes")
    func damagedFiles() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let cache = DiskCache(directory: folder.url)
        try cache.store(Data(repeating: 7, count: 1000), forKey: "k")
        let file = cache.fileURL(forKey: "k")
        let whole = try Data(contentsOf: file)
        for cut in [0, 5, 11, whole.count - 1, whole.count - 13] {
            try whole.prefix(cut).write(to: file)
            #expect(cache.data(forKey: "k") == nil, "cut at \(cut)")
            #expect(cache.entry(forKey: "k") == nil)
        }
        var lying = whole
        lying[lying.count - 12] = 0xFF  // payload length larger than the file
        lying[lying.count - 11] = 0xFF
        try lying.write(to: file)
        #expect(cache.data(forKey: "k") == nil)
        try Data("not a cache entry at all".utf8).write(to: file)
        #expect(cache.dataAndEntry(forKey: "k") == nil)
    }

    @Test("Expiry by modification date: rewritten entries live on")
    func expiryByModification() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let clock = TestClock()
        var configuration = DiskCache.Configuration()
        configuration.now = clock.provider
        configuration.expireType = .modificationDate
        let cache = DiskCache(directory: folder.url, configuration: configuration)
        try cache.store(Data("a".utf8), forKey: "a")
        try cache.store(Data("b".utf8), forKey: "b")
        clock.advance(days: 4)
        try cache.store(Data("b2".utf8), forKey: "b")
        _ = cache.data(forKey: "a")  // reading does not count
        clock.advance(days: 4)
        let result = cache.removeExpiredEntries()
        #expect(result.expiredRemoved == 1)
        #expect(!cache.contains("a"))
        #expect(cache.data(forKey: "b") == Data("b2".utf8))
        #expect(cache.entry(forKey: "b")?.storedDate == clock.now.addingTimeInterval(-4 * 86_400))
    }

    @Test("Expiry by access date: entries read recently live on")
    func expiryByAccess() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let clock = TestClock()
        var configuration = DiskCache.Configuration()
        configuration.now = clock.provider
        configuration.expireType = .accessDate
        let cache = DiskCache(directory: folder.url, configuration: configuration)
        try cache.store(Data("a".utf8), forKey: "a")
        try cache.store(Data("b".utf8), forKey: "b")
        clock.advance(days: 6)
        #expect(cache.data(forKey: "a") == Data("a".utf8))
        clock.advance(days: 2)
        #expect(cache.removeExpiredEntries().expiredRemoved == 1)
        #expect(cache.contains("a"))
        #expect(!cache.contains("b"))
    }

    @Test("Expiry by creation date counts from the file's birth; reads do not renew it")
    func expiryByCreation() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        // The file system stamps birth times with the real clock: run the injected one from now.
        let clock = Locked(Date())
        var configuration = DiskCache.Configuration()
        configuration.now = { clock.value }
        configuration.expireType = .creationDate
        let cache = DiskCache(directory: folder.url, configuration: configuration)
        try cache.store(Data("a".utf8), forKey: "a")
        clock.withLock { $0 += 6 * 86_400 }
        _ = cache.data(forKey: "a")
        #expect(cache.removeExpiredEntries().expiredRemoved == 0)
        clock.withLock { $0 += 2 * 86_400 }
        #expect(cache.removeExpiredEntries().expiredRemoved == 1)
        #expect(!cache.contains("a"))
    }

    @Test("Over the size limit, cleanup removes the oldest entries until under half of it")
    func trimToSize() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let clock = TestClock()
        var configuration = DiskCache.Configuration()
        configuration.now = clock.provider
        configuration.maxSize = nil
        // Written without a limit (another process's cache, say), then cleaned with one.
        let unlimited = DiskCache(directory: folder.url, configuration: configuration)
        for index in 0..<12 {
            try unlimited.store(Data(repeating: UInt8(index), count: 1000), forKey: "k\(index)")
            clock.advance(days: 0.01)
        }
        configuration.maxSize = 10 * 1100
        let cache = DiskCache(directory: folder.url, configuration: configuration)
        #expect(cache.totalSize > 10 * 1100)
        #expect(cache.count == 12)
        let result = cache.removeExpiredEntries()
        #expect(result.expiredRemoved == 0)
        #expect(result.remainingSize <= 10 * 1100 / 2)
        #expect(result.trimmedRemoved == 12 - result.remainingCount)
        // The newest survive.
        let survivors = Set(cache.entries().map(\.key))
        let expected = Set((12 - result.remainingCount..<12).map { "k\($0)" })
        #expect(survivors == expected)
    }

    @Test("A write that takes the folder over the size limit trims it, oldest first, without waiting for cleanup")
    func writesKeepTheSizeLimit() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let clock = TestClock()
        var configuration = DiskCache.Configuration()
        configuration.now = clock.provider
        configuration.maxSize = 10 * 1100
        let cache = DiskCache(directory: folder.url, configuration: configuration)
        var largest = 0
        for index in 0..<40 {
            try cache.store(Data(repeating: UInt8(index), count: 1000), forKey: "k\(index)")
            clock.advance(days: 0.01)
            largest = max(largest, cache.totalSize)
            #expect(cache.contains("k\(index)"), "the entry just written survives its own trim")
        }
        #expect(largest <= 10 * 1100, "the folder peaked at \(largest) bytes")
        #expect(cache.count < 40)
        // Replacing an entry counts only the difference: rewriting one key never trims.
        let before = Set(cache.entries().map(\.key))
        for _ in 0..<20 { try cache.store(Data(repeating: 7, count: 1000), forKey: "k39") }
        #expect(Set(cache.entries().map(\.key)) == before)
        // Writes by someone else are seen at the next count: a removal recounts.
        let other = DiskCache(directory: folder.url, configuration: DiskCache.Configuration())
        for index in 0..<8 { try other.store(Data(repeating: 1, count: 1000), forKey: "other\(index)") }
        cache.remove(forKey: "k39")
        try cache.store(Data(repeating: 9, count: 1000), forKey: "last")
        #expect(cache.totalSize <= 10 * 1100)
        #expect(cache.contains("last"))
    }

    @Test("Leftover temporary files are not entries; cleanup removes old ones")
    func temporaryFiles() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let cache = DiskCache(directory: folder.url)
        try cache.store(Data("x".utf8), forKey: "x")
        let temporary = folder.file(".tmp-1-2")
        try Data("half".utf8).write(to: temporary)
        #expect(cache.count == 1)
        try FileManager.default.setAttributes(
            [.modificationDate: Date().addingTimeInterval(-3600)],
            ofItemAtPath: temporary.path
        )
        #expect(cache.removeExpiredEntries().temporaryRemoved == 1)
        #expect(!FileManager.default.fileExists(atPath: temporary.path))
        // Files that are not ours stay.
        try Data("mine".utf8).write(to: folder.file("README"))
        cache.removeAll()
        #expect(cache.count == 0)
        #expect(FileManager.default.fileExists(atPath: folder.file("README").path))
    }
}
