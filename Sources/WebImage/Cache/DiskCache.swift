import CWebImageSystem
import Crypto
import Foundation
import Synchronization
import WebImageHTTP

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
        public var maxAge: Duration? = .seconds(7 * 24 * 60 * 60)
        /// Which date `maxAge` counts from. Default `.modificationDate`.
        public var expireType: ExpireType = .modificationDate
        /// A write that takes the folder over this many bytes trims it, oldest first, to half
        /// of it (so does cleanup). `nil`: no limit. Default 1 GiB.
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
    let directoryPath: String
    /// Files whose checksum was verified (or written) by this cache and that have not changed
    /// since: a repeated hit does not hash the same bytes again.
    let verifiedChecksums = VerifiedFiles()
    /// The folder's entry bytes as this cache last counted them, kept up to date by its writes;
    /// `nil` until the first write under a size limit counts them (and after a removal).
    let knownSize = Mutex<Int?>(nil)

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

    func path(forKey key: String) -> String { directoryPath + "/" + Self.fileName(forKey: key) }

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
        let replaced = configuration.maxSize == nil ? 0 : EntryFile.size(atPath: finalPath)
        guard rename(temporaryPath, finalPath) == 0 else { throw DiskCacheError("rename", path: finalPath) }
        renamed = true
        if configuration.maxSize != nil { keepWithinSizeLimit(written: data.count + trailer.count, replaced: replaced) }
        // We wrote these bytes: the first read of this file need not hash them again.
        if let (identity, stamp) = EntryFile.identityAndStamp(of: fd) {
            verifiedChecksums.remember(identity, stamp: stamp)
        }
    }

    private func createDirectory() throws(DiskCacheError) {
        do {
            try FileManager.default.createDirectory(atPath: directoryPath, withIntermediateDirectories: true)
        } catch {
            throw DiskCacheError("create directory", path: directoryPath, message: reasonInWords(error))
        }
    }
}
