import Foundation
import Testing
import WebImage
import WebImageTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// Entries that were damaged, swapped, replaced by something that is not a file, or left half
/// written: each reads as a miss (never wrong bytes, never a hang), and the cache heals.
@Suite("DiskCache integrity", .timeLimit(.minutes(1)))
struct DiskCacheIntegrityTests {
    @Test("A flipped payload byte (trailer intact) is a miss, and the entry is removed")
    func flippedByte() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let key = "https://example.com/a.png"
        let data = Data((0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        // Given an entry written by one cache and damaged on disk
        try DiskCache(directory: folder.url).store(data, forKey: key)
        let file = DiskCache(directory: folder.url).fileURL(forKey: key)
        var bytes = try Data(contentsOf: file)
        bytes[1234] ^= 0x40
        try bytes.write(to: file)
        // When a fresh cache (nothing verified yet) reads it
        let reader = DiskCache(directory: folder.url)
        // Then it is a miss and the file is gone; storing again heals it
        #expect(reader.data(forKey: key) == nil)
        #expect(reader.dataAndEntry(forKey: key) == nil)
        #expect(!FileManager.default.fileExists(atPath: file.path))
        try reader.store(data, forKey: key)
        #expect(reader.data(forKey: key) == data)
    }

    @Test("A change after a verified read is caught too (the same cache reads it again)")
    func damagedAfterVerifiedRead() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let cache = DiskCache(directory: folder.url)
        let key = "k"
        let data = Data(repeating: 7, count: 300)
        try cache.store(data, forKey: key)
        #expect(cache.data(forKey: key) == data)
        // In place, same size: only the file's change time tells
        let handle = try FileHandle(forUpdating: cache.fileURL(forKey: key))
        try handle.seek(toOffset: 10)
        handle.write(Data([8]))
        try handle.close()
        #expect(cache.data(forKey: key) == nil)
    }

    @Test("An entry file copied over another key's is a miss for that key, not the other image")
    func swappedEntries() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let cache = DiskCache(directory: folder.url)
        try cache.store(Data("image A".utf8), forKey: "https://example.com/a.png")
        try cache.store(Data("image B".utf8), forKey: "https://example.com/b.png")
        let a = cache.fileURL(forKey: "https://example.com/a.png")
        let b = cache.fileURL(forKey: "https://example.com/b.png")
        try FileManager.default.removeItem(at: b)
        try FileManager.default.copyItem(at: a, to: b)
        #expect(cache.data(forKey: "https://example.com/b.png") == nil)
        #expect(cache.entry(forKey: "https://example.com/b.png") == nil)
        #expect(cache.data(forKey: "https://example.com/a.png") == Data("image A".utf8))
    }

    @Test("A FIFO at an entry's path is a miss at once (no blocking open or read) and is removed")
    func fifoEntry() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let cache = DiskCache(directory: folder.url)
        let key = "https://example.com/fifo.png"
        try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
        #expect(mkfifo(cache.fileURL(forKey: key).path, 0o644) == 0)
        #expect(cache.data(forKey: key) == nil)
        #expect(cache.entry(forKey: key) == nil)
        #expect(!FileManager.default.fileExists(atPath: cache.fileURL(forKey: key).path))
    }

    @Test("A symbolic link at an entry's path is never followed: a miss, even to a valid entry")
    func symlinkEntry() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let cache = DiskCache(directory: folder.url)
        try cache.store(Data("real".utf8), forKey: "real")
        let link = cache.fileURL(forKey: "link")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: cache.fileURL(forKey: "real"))
        #expect(cache.data(forKey: "link") == nil)
        var status = stat()
        #expect(lstat(link.path, &status) != 0, "the link was removed")
        #expect(cache.data(forKey: "real") == Data("real".utf8))
    }

    @Test("A large foreign file at an entry's path is rejected from its last bytes, not read whole")
    func largeForeignFile() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let cache = DiskCache(directory: folder.url)
        let key = "big"
        try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
        // A 2 GiB sparse file: reading it whole would take seconds and gigabytes.
        let fd = open(cache.fileURL(forKey: key).path, O_WRONLY | O_CREAT, 0o644)
        #expect(fd >= 0)
        #expect(ftruncate(fd, 2 << 30) == 0)
        close(fd)
        let peakBefore = Self.peakResidentBytes()
        #expect(cache.data(forKey: key) == nil)
        // Reading it whole would have raised the peak by 2 GiB.
        #expect(Self.peakResidentBytes() - peakBefore < 256 << 20)
    }

    static func peakResidentBytes() -> Int {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        return usage.ru_maxrss * 1024
    }

    @Test("Version 1 entries (no checksum) read as damaged")
    func oldVersion() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let cache = DiskCache(directory: folder.url)
        try cache.store(Data("x".utf8), forKey: "k")
        let file = cache.fileURL(forKey: "k")
        var bytes = try Data(contentsOf: file)
        let payloadLength = Int(bytes[bytes.count - 12]) | Int(bytes[bytes.count - 11]) << 8
        bytes[bytes.count - 12 - payloadLength] = 1
        try bytes.write(to: file)
        #expect(DiskCache(directory: folder.url).data(forKey: "k") == nil)
    }

    @Test("A cache's first write removes temporary files whose writer is gone; stats count the rest")
    func orphanedTemporaryFiles() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
        // A writer that was killed (no such process) and one still running (this process)
        let gone = folder.url.appendingPathComponent(".tmp-\(Int32.max - 7)-1234")
        let live = folder.url.appendingPathComponent(".tmp-\(getpid())-5678")
        try Data("partial".utf8).write(to: gone)
        try Data("in progress".utf8).write(to: live)
        #expect(DiskCache(directory: folder.url).temporaryFiles.count == 2)
        let cache = ImageCache(directory: folder.url)
        // Opening alone leaves the folder alone; the first write sweeps it.
        await cache.flush()
        #expect(FileManager.default.fileExists(atPath: gone.path))
        cache.store(nil, data: Data("new".utf8), forKey: "k", cacheType: .disk, completion: nil)
        await cache.flush()
        #expect(!FileManager.default.fileExists(atPath: gone.path))
        #expect(FileManager.default.fileExists(atPath: live.path))
        #expect(cache.diskCache.temporaryFiles.count == 1)
        #expect(cache.diskCache.temporaryFiles.size == 11)
    }

    @Test("flush waits for every queued write: all entries are on disk when it returns")
    func flushWaitsForWrites() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        var configuration = ImageCache.Configuration()
        configuration.disk.syncsWrites = true  // slow writes, so some are still queued
        let cache = ImageCache(directory: folder.url, configuration: configuration)
        for index in 0..<200 {
            cache.store(
                nil,
                data: Data("entry \(index)".utf8),
                forKey: "key-\(index)",
                cacheType: .disk,
                completion: nil
            )
        }
        await cache.flush()
        // A second cache (another process would see the same) finds all of them.
        let disk = DiskCache(directory: folder.url)
        #expect(disk.count == 200)
        #expect(disk.data(forKey: "key-199") == Data("entry 199".utf8))
        #expect(disk.temporaryFiles.count == 0)
    }
}
