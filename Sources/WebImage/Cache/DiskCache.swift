import CWebImageSystem
import Crypto
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Image bytes on disk, one file per key, in one folder (the disk half of SDImageCache).
///
/// - File names are the SHA-256 of the key plus the key's file extension, so any key (a query
///   string, unicode, `/`, `..`, 10 KB) maps to a safe name inside the folder.
/// - Writes go to a temporary file that is renamed over the entry: a process killed at any
///   moment leaves each entry whole or absent, and processes sharing the folder never see a
///   half-written entry. Readers tolerate entries deleted under them.
/// - Each entry keeps its key, content type, `ETag`, `Last-Modified`, stored date and optional
///   extended data in a trailer after the image bytes (see ``DiskCacheMetadata``).
/// - Each entry's trailer also holds an XXH64 checksum of its bytes. A read checks the stored key
///   and the checksum (once per file and change: a file this process verified or wrote, unchanged
///   since by its size, mtime and ctime, is not hashed again); a damaged entry is removed and
///   reads as a miss.
/// - Only regular files are read: a symbolic link, FIFO or folder at an entry's name is a miss.
/// - Opening a cache touches nothing; size, count and cleanup scan the folder when asked.
///
/// Methods are synchronous and thread-safe; they do blocking file I/O, so call them off event
/// loops (``ImageCache`` runs them on its own queues).
public final class DiskCache: Sendable {
    /// Which file date ``DiskCache/Configuration/maxAge`` counts from.
    public enum ExpireType: String, Sendable, Hashable, CaseIterable {
        /// The last read (the cache records reads itself; file systems mounted `noatime` do not).
        case accessDate
        /// The last write (the default, as in SDWebImage).
        case modificationDate
        /// The file's birth time where the file system reports it, else its last write.
        case creationDate
    }

    /// Expiry, size limit, durability and clock of a ``DiskCache``.
    public struct Configuration: Sendable {
        /// Entries older than this (by `expireType`) are removed by cleanup. `nil`: never.
        /// Default one week.
        public var maxAge: TimeInterval? = 7 * 24 * 60 * 60
        /// Which date `maxAge` counts from. Default `.modificationDate`.
        public var expireType: ExpireType = .modificationDate
        /// Cleanup trims the folder, oldest first, to half this many bytes once it is over.
        /// `nil`: no limit. Default 1 GiB.
        public var maxSize: Int? = 1 << 30
        /// `fsync` each entry before renaming it into place: survives power loss, costs ~0.5 ms a
        /// write. Default `false` (a killed process never leaves a torn entry either way).
        public var syncsWrites = false
        /// The clock for stored, access and expiry dates (inject one in tests).
        public var now: @Sendable () -> Date = { Date() }

        /// The default configuration.
        public init() {}
    }

    /// What a cleanup did.
    public struct CleanupResult: Sendable, Hashable {
        /// Entries removed for age.
        public var expiredRemoved = 0
        /// Entries removed to fit the size limit.
        public var trimmedRemoved = 0
        /// Leftover temporary files removed.
        public var temporaryRemoved = 0
        /// Entries left.
        public var remainingCount = 0
        /// Bytes left.
        public var remainingSize = 0
    }

    /// The folder holding the entries.
    public let directory: URL
    /// The configuration the cache was made with.
    public let configuration: Configuration
    private let directoryPath: String
    /// Files whose checksum was verified (or written) by this cache and that have not changed
    /// since: a repeated hit does not hash the same bytes again.
    private let verifiedChecksums = VerifiedFiles()

    /// A cache in `directory` (created on the first write).
    public init(directory: URL, configuration: Configuration = Configuration()) {
        self.directory = directory.standardizedFileURL
        self.configuration = configuration
        directoryPath = self.directory.path
    }

    // MARK: Names

    /// The entry's file name: SHA-256 of the key in hex, plus the key's extension when it is
    /// 1–8 ASCII letters or digits.
    public static func fileName(forKey key: String) -> String {
        let digest = SHA256.hash(data: Data(key.utf8))
        let hexDigits = Array("0123456789abcdef".utf8)
        var hex = [UInt8]()
        hex.reserveCapacity(64)
        for byte in digest {
            hex.append(hexDigits[Int(byte >> 4)])
            hex.append(hexDigits[Int(byte & 0x0F)])
        }
        var name = String(decoding: hex, as: UTF8.self)
        if let ext = pathExtension(of: key) { name += "." + ext }
        return name
    }

    /// The file `key` is stored in.
    public func fileURL(forKey key: String) -> URL {
        URL(fileURLWithPath: path(forKey: key), isDirectory: false)
    }

    private func path(forKey key: String) -> String { directoryPath + "/" + Self.fileName(forKey: key) }

    static func pathExtension(of key: String) -> String? {
        // Bytes, not Characters: this runs on every lookup.
        let bytes = key.utf8
        let end = bytes.firstIndex { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? bytes.endIndex
        var extensionStart: String.UTF8View.Index?
        var index = end
        while index > bytes.startIndex {
            let previous = bytes.index(before: index)
            let byte = bytes[previous]
            if byte == UInt8(ascii: "/") { break }
            if byte == UInt8(ascii: ".") {
                extensionStart = index
                // A leading dot (".hidden") names a file, not an extension.
                if previous == bytes.startIndex || bytes[bytes.index(before: previous)] == UInt8(ascii: "/") {
                    extensionStart = nil
                }
                break
            }
            index = previous
        }
        guard let start = extensionStart else { return nil }
        let ext = bytes[start..<end]
        guard (1...8).contains(ext.count),
            ext.allSatisfy({ (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) })
        else { return nil }
        return String(decoding: ext, as: UTF8.self).lowercased()
    }

    static func isEntryName(_ name: String) -> Bool {
        let hash = name.prefix(64)
        guard hash.count == 64, hash.allSatisfy(\.isHexDigit) else { return false }
        let rest = name.dropFirst(64)
        return rest.isEmpty || (rest.first == "." && rest.count >= 2 && rest.count <= 9)
    }

    static let temporaryPrefix = ".tmp-"

    // MARK: Writing

    /// Stores `data` under `key` with `metadata`, replacing any entry atomically.
    /// - Throws: ``DiskCacheError`` naming the file and the system error.
    public func store(
        _ data: Data,
        forKey key: String,
        metadata: DiskCacheMetadata = DiskCacheMetadata()
    )
        throws(DiskCacheError)
    {
        let now = configuration.now()
        let checksum = data.withUnsafeBytes { DiskCacheEntryFormat.checksum($0) }
        let trailer = DiskCacheEntryFormat.trailer(key: key, metadata: metadata, storedDate: now, checksum: checksum)
        let finalPath = path(forKey: key)
        let temporaryPath =
            directoryPath + "/" + Self.temporaryPrefix + "\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
        var fd = open(temporaryPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        if fd < 0 && errno == ENOENT {
            try createDirectory()
            fd = open(temporaryPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        }
        guard fd >= 0 else { throw DiskCacheError("create", path: temporaryPath) }
        var renamed = false
        defer {
            if !renamed { unlink(temporaryPath) }
            close(fd)
        }
        guard data.withUnsafeBytes({ writeAll(fd, $0) }), trailer.withUnsafeBytes({ writeAll(fd, $0) }) else {
            throw DiskCacheError("write", path: temporaryPath)
        }
        let seconds = now.timeIntervalSince1970
        _ = wi_set_file_times(fd, seconds, seconds)
        if configuration.syncsWrites && fsync(fd) != 0 { throw DiskCacheError("fsync", path: temporaryPath) }
        guard rename(temporaryPath, finalPath) == 0 else { throw DiskCacheError("rename", path: finalPath) }
        renamed = true
        // We wrote these bytes: the first read of this file need not hash them again.
        var status = stat()
        if fstat(fd, &status) == 0 {
            verifiedChecksums.remember(EntryFile.Identity(status), stamp: EntryFile.Stamp(status))
        }
    }

    /// Writes every byte; `false` with `errno` set on failure.
    private func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += written
        }
        return true
    }

    private func createDirectory() throws(DiskCacheError) {
        do {
            try FileManager.default.createDirectory(atPath: directoryPath, withIntermediateDirectories: true)
        } catch {
            throw DiskCacheError("create directory", path: directoryPath, message: "\(error)")
        }
    }

    // MARK: Reading

    /// The image bytes stored under `key`, or `nil` (absent, deleted meanwhile, or damaged).
    /// With the `accessDate` expiry the read is recorded.
    public func data(forKey key: String) -> Data? { read(key, wantsEntry: false)?.data }

    /// The image bytes and the entry's metadata.
    public func dataAndEntry(forKey key: String) -> (data: Data, entry: DiskCacheEntry)? {
        guard let (data, entry) = read(key, wantsEntry: true), let entry else { return nil }
        return (data, entry)
    }

    /// The entry's metadata without its bytes (reads only the trailer).
    public func entry(forKey key: String) -> DiskCacheEntry? { entry(atPath: path(forKey: key), key: key) }

    /// Whether an entry exists for `key`.
    public func contains(_ key: String) -> Bool { access(path(forKey: key), F_OK) == 0 }

    /// Reads the entry for `key`: only regular files (a FIFO or device at the path never blocks
    /// a reader, a symbolic link is never followed), the trailer checked before the data is
    /// trusted, the stored key compared with `key` and the checksum with the data. Anything else
    /// is a miss, and a damaged entry is removed so the next store heals it.
    private func read(_ key: String, wantsEntry: Bool) -> (data: Data, entry: DiskCacheEntry?)? {
        let path = path(forKey: key)
        guard let file = EntryFile(path: path, onForeign: { removeDamaged(path: path, identity: $0) }) else {
            return nil
        }
        defer { file.close() }
        let size = file.size
        let buffer: UnsafeMutableRawPointer
        let payloadRange: Range<Int>
        let dataLength: Int
        // Small entries: one read of the whole file. Large ones: the trailer first, so a big file
        // that is not an entry costs two small reads, not a read of all of it.
        if size <= Self.wholeReadLimit {
            buffer = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 16)
            let all = UnsafeMutableRawBufferPointer(start: buffer, count: size)
            guard file.read(into: all, at: 0),
                let (data, payload) = DiskCacheEntryFormat.dataLength(
                    fileSize: size,
                    footer: UnsafeRawBufferPointer(rebasing: all[(size - DiskCacheEntryFormat.footerSize)...])
                )
            else {
                buffer.deallocate()
                removeDamaged(path: path, identity: file.identity)
                return nil
            }
            dataLength = data
            payloadRange = data..<data + payload
        } else {
            var footer = [UInt8](repeating: 0, count: DiskCacheEntryFormat.footerSize)
            guard footer.withUnsafeMutableBytes({ file.read(into: $0, at: size - DiskCacheEntryFormat.footerSize) }),
                let (data, payload) = footer.withUnsafeBytes({
                    DiskCacheEntryFormat.dataLength(fileSize: size, footer: $0)
                })
            else {
                removeDamaged(path: path, identity: file.identity)
                return nil
            }
            buffer = UnsafeMutableRawPointer.allocate(byteCount: data + payload, alignment: 16)
            guard file.read(into: UnsafeMutableRawBufferPointer(start: buffer, count: data + payload), at: 0) else {
                buffer.deallocate()
                return nil
            }
            dataLength = data
            payloadRange = data..<data + payload
        }
        let all = UnsafeRawBufferPointer(start: buffer, count: payloadRange.upperBound)
        let dataBytes = UnsafeRawBufferPointer(rebasing: all[..<dataLength])
        guard let decoded = DiskCacheEntryFormat.decode(payload: UnsafeRawBufferPointer(rebasing: all[payloadRange])),
            decoded.key == key,
            verifiedChecksums.isVerified(file.identity, stamp: file.stamp)
                || DiskCacheEntryFormat.checksum(dataBytes) == decoded.checksum
        else {
            buffer.deallocate()
            removeDamaged(path: path, identity: file.identity)
            return nil
        }
        var stamp = file.stamp
        if configuration.expireType == .accessDate {
            _ = wi_set_file_times(file.descriptor, configuration.now().timeIntervalSince1970, -1)
            // Setting the access time changes the file's ctime: remember the new stamp.
            stamp = file.currentStamp() ?? stamp
        }
        verifiedChecksums.remember(file.identity, stamp: stamp)
        let entry =
            wantsEntry
            ? DiskCacheEntry(
                key: decoded.key,
                metadata: decoded.metadata,
                storedDate: decoded.stored,
                dataSize: dataLength,
                fileURL: URL(fileURLWithPath: path)
            ) : nil
        let data = Data(
            bytesNoCopy: buffer,
            count: dataLength,
            deallocator: .custom { pointer, _ in pointer.deallocate() }
        )
        return (data, entry)
    }

    /// Entries up to this size are read in one call.
    static let wholeReadLimit = 4 << 20

    /// Removes the damaged or foreign file at `path`, unless another writer has replaced it
    /// meanwhile (a different file now has the name).
    private func removeDamaged(path: String, identity: EntryFile.Identity) {
        var status = stat()
        guard lstat(path, &status) == 0, status.st_dev == identity.device, status.st_ino == identity.inode else {
            return
        }
        unlink(path)
    }

    private func entry(atPath path: String, key: String? = nil) -> DiskCacheEntry? {
        guard let file = EntryFile(path: path, onForeign: { _ in }) else { return nil }
        defer { file.close() }
        let size = file.size
        var footer = [UInt8](repeating: 0, count: DiskCacheEntryFormat.footerSize)
        guard footer.withUnsafeMutableBytes({ file.read(into: $0, at: size - DiskCacheEntryFormat.footerSize) }),
            let (dataLength, payloadLength) = footer.withUnsafeBytes({
                DiskCacheEntryFormat.dataLength(fileSize: size, footer: $0)
            })
        else { return nil }
        var payload = [UInt8](repeating: 0, count: payloadLength)
        guard payload.withUnsafeMutableBytes({ file.read(into: $0, at: dataLength) }),
            let decoded = payload.withUnsafeBytes({ DiskCacheEntryFormat.decode(payload: $0) }),
            key == nil || decoded.key == key
        else { return nil }
        return DiskCacheEntry(
            key: decoded.key,
            metadata: decoded.metadata,
            storedDate: decoded.stored,
            dataSize: dataLength,
            fileURL: URL(fileURLWithPath: path)
        )
    }

    // MARK: Removing

    /// Removes the entry for `key` (no error when there is none).
    public func remove(forKey key: String) { unlink(path(forKey: key)) }

    /// Removes every entry (and leftover temporary files); other files in the folder stay.
    public func removeAll() {
        scan(includeTemporary: true) { fd, files in
            for file in files { unlinkat(fd, file.name, 0) }
        }
    }

    /// Removes temporary files whose writer is gone: its process no longer runs, or the file is
    /// over a minute old (a write takes milliseconds). Returns how many it removed. ``ImageCache``
    /// runs it when it opens a folder, on its write queue.
    @discardableResult
    public func removeOrphanedTemporaryFiles() -> Int {
        let now = Date().timeIntervalSince1970
        return scan(includeTemporary: true, includeEntries: false) { fd, files in
            var removed = 0
            for file in files where Self.isOrphaned(file, now: now) {
                if unlinkat(fd, file.name, 0) == 0 { removed += 1 }
            }
            return removed
        }
    }

    /// Temporary files in the folder (writes in progress, or left by writers that were killed):
    /// how many and their bytes.
    public var temporaryFiles: (count: Int, size: Int) {
        scan(includeTemporary: true, includeEntries: false) { _, files in
            (files.count, files.reduce(0) { $0 + Int($1.times.size) })
        }
    }

    /// `.tmp-<pid>-<random>`: orphaned when that process is gone or the file is over a minute old.
    private static func isOrphaned(_ file: ScannedFile, now: Double) -> Bool {
        if now - file.times.modification_time > 60 { return true }
        let fields = file.name.dropFirst(temporaryPrefix.count).split(separator: "-", maxSplits: 1)
        guard let pid = fields.first.flatMap({ pid_t($0) }), pid > 0 else { return true }
        return kill(pid, 0) != 0 && errno == ESRCH
    }

    /// Removes expired entries, temporary files left by killed writers (see
    /// ``removeOrphanedTemporaryFiles()``),
    /// then, when the folder is over `maxSize`, the oldest entries until it is under half of it.
    @discardableResult
    public func removeExpiredEntries() -> CleanupResult {
        scan(includeTemporary: true) { fd, files in removeExpired(fd: fd, files: files) }
    }

    private func removeExpired(fd: Int32, files: [ScannedFile]) -> CleanupResult {
        var result = CleanupResult()
        let now = configuration.now().timeIntervalSince1970
        let realNow = Date().timeIntervalSince1970
        var kept: [ScannedFile] = []
        for file in files {
            if file.isTemporary {
                if Self.isOrphaned(file, now: realNow) {
                    unlinkat(fd, file.name, 0)
                    result.temporaryRemoved += 1
                }
                continue
            }
            if let maxAge = configuration.maxAge, now - date(of: file) > maxAge {
                unlinkat(fd, file.name, 0)
                result.expiredRemoved += 1
            } else {
                kept.append(file)
            }
        }
        var total = kept.reduce(0) { $0 + Int($1.times.size) }
        if let maxSize = configuration.maxSize, total > maxSize {
            kept.sort { date(of: $0) < date(of: $1) }
            var removed = 0
            for file in kept where total > maxSize / 2 {
                unlinkat(fd, file.name, 0)
                total -= Int(file.times.size)
                removed += 1
            }
            kept.removeFirst(removed)
            result.trimmedRemoved = removed
        }
        result.remainingCount = kept.count
        result.remainingSize = total
        return result
    }

    private func date(of file: ScannedFile) -> Double {
        switch configuration.expireType {
        case .accessDate: max(file.times.access_time, file.times.modification_time)
        case .modificationDate: file.times.modification_time
        case .creationDate: file.times.creation_time
        }
    }

    // MARK: Size

    /// Bytes taken by the entries' files.
    public var totalSize: Int { scan(includeTemporary: false) { $1.reduce(0) { $0 + Int($1.times.size) } } }

    /// The number of entries.
    public var count: Int { scan(includeTemporary: false) { $1.count } }

    /// Every entry's metadata, oldest write first (reads each trailer).
    public func entries() -> [DiskCacheEntry] {
        scan(includeTemporary: false) { _, files in
            files.sorted { $0.times.modification_time < $1.times.modification_time }
                .compactMap { entry(atPath: directoryPath + "/" + $0.name) }
        }
    }

    private struct ScannedFile {
        var name: String
        var times: wi_file_times
        var isTemporary: Bool
    }

    /// Lists our files in the folder with their times and runs `body` with the open directory's
    /// descriptor (for `unlinkat`) and the list.
    private func scan<Result>(
        includeTemporary: Bool,
        includeEntries: Bool = true,
        _ body: (Int32, [ScannedFile]) -> Result
    ) -> Result {
        guard let stream = opendir(directoryPath) else { return body(-1, []) }
        defer { closedir(stream) }
        let fd = dirfd(stream)
        var files: [ScannedFile] = []
        while let entry = readdir(stream) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: Int(NAME_MAX) + 1) { String(cString: $0) }
            }
            let isTemporary = name.hasPrefix(Self.temporaryPrefix)
            guard isTemporary ? includeTemporary : includeEntries && Self.isEntryName(name) else { continue }
            var times = wi_file_times()
            guard wi_file_times_at(fd, name, &times) == 0, times.is_regular != 0 else { continue }
            files.append(ScannedFile(name: name, times: times, isTemporary: isTemporary))
        }
        return body(fd, files)
    }
}

/// A disk cache operation that failed: which, on which file, and the system's reason.
public struct DiskCacheError: Error, Sendable, CustomStringConvertible {
    /// What failed: `create`, `write`, `rename`, ….
    public let operation: String
    /// The file or folder it failed on.
    public let path: String
    /// The system's reason.
    public let message: String

    init(_ operation: String, path: String, message: String? = nil) {
        self.operation = operation
        self.path = path
        self.message = message ?? String(cString: strerror(errno))
    }

    /// The path, the operation and the reason.
    public var description: String { "\(path): \(operation) failed: \(message)" }
}
