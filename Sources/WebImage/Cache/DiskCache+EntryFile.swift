@_spi(WebImageInternals) import WebImageCoders

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One entry file opened for reading: a regular file only, opened without following a symbolic
/// link and without blocking (a FIFO at the path opens at once and is refused).
struct EntryFile {
    /// Which file this is, whatever its name.
    struct Identity: Hashable, Sendable {
        var device: UInt64
        var inode: UInt64

        init(_ status: stat) {
            device = UInt64(status.st_dev)
            inode = UInt64(status.st_ino)
        }

        /// The identity of the file (or link) named `path` now; `nil` when there is none.
        init?(linkAtPath path: String) {
            var status = stat()
            guard lstat(path, &status) == 0 else { return nil }
            self.init(status)
        }
    }

    /// The size of the file (or link) named `path`; 0 when there is none.
    static func size(atPath path: String) -> Int {
        var status = stat()
        return lstat(path, &status) == 0 ? Int(status.st_size) : 0
    }

    /// The identity and stamp of the open file `fd`; `nil` when `fstat` fails.
    static func identityAndStamp(of fd: Int32) -> (Identity, Stamp)? {
        var status = stat()
        guard fstat(fd, &status) == 0 else { return nil }
        return (Identity(status), Stamp(status))
    }

    /// What changes when anyone writes the file: its size, modification and change times. The
    /// change time (ctime) cannot be set back by a writer, so an equal stamp means unchanged bytes.
    struct Stamp: Hashable, Sendable {
        var size: Int64
        var modifiedSeconds: Int
        var modifiedNanoseconds: Int
        var changedSeconds: Int
        var changedNanoseconds: Int

        init(_ status: stat) {
            size = Int64(status.st_size)
            #if canImport(Darwin)
            modifiedSeconds = status.st_mtimespec.tv_sec
            modifiedNanoseconds = status.st_mtimespec.tv_nsec
            changedSeconds = status.st_ctimespec.tv_sec
            changedNanoseconds = status.st_ctimespec.tv_nsec
            #else
            modifiedSeconds = status.st_mtim.tv_sec
            modifiedNanoseconds = status.st_mtim.tv_nsec
            changedSeconds = status.st_ctim.tv_sec
            changedNanoseconds = status.st_ctim.tv_nsec
            #endif
        }
    }

    let descriptor: Int32
    let size: Int
    let identity: Identity
    let stamp: Stamp

    /// Opens `path`; `nil` when it is missing or not an entry file. `onForeign` gets the identity
    /// of something at the path that is not a regular file of entry size (a link, a FIFO, a
    /// folder, a file too short to be an entry), which the cache may remove.
    init?(path: String, onForeign: (Identity) -> Void) {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW)
        guard fd >= 0 else {
            var status = stat()
            if errno == ELOOP, lstat(path, &status) == 0 { onForeign(Identity(status)) }
            return nil
        }
        var status = stat()
        guard fstat(fd, &status) == 0 else {
            _ = systemClose(fd)
            return nil
        }
        guard (status.st_mode & S_IFMT) == S_IFREG, Int(status.st_size) >= DiskCacheEntryFormat.footerSize else {
            _ = systemClose(fd)
            onForeign(Identity(status))
            return nil
        }
        descriptor = fd
        size = Int(status.st_size)
        identity = Identity(status)
        stamp = Stamp(status)
    }

    /// Fills `buffer` from `offset`; `false` when the file ends first or a read fails.
    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int) -> Bool {
        guard offset >= 0, let base = buffer.baseAddress else { return buffer.isEmpty }
        var filled = 0
        while filled < buffer.count {
            let count = pread(descriptor, base + filled, buffer.count - filled, off_t(offset + filled))
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return false }
            filled += count
        }
        return true
    }

    /// The file's stamp now.
    func currentStamp() -> Stamp? {
        var status = stat()
        return fstat(descriptor, &status) == 0 ? Stamp(status) : nil
    }

    func close() { _ = systemClose(descriptor) }
}

/// The entry files whose checksum has been checked (or that this process wrote), with the stamp
/// they had then. Bounded: past `capacity` files it starts over.
final class VerifiedFiles: Sendable {
    /// `Protected` (pthread-based), not `Mutex`: ThreadSanitizer sees this lock.
    private let files = Protected<[EntryFile.Identity: EntryFile.Stamp]>([:])
    private let capacity: Int

    init(capacity: Int = 16_384) { self.capacity = capacity }

    /// Whether `identity` was verified with exactly this stamp (so its bytes are unchanged).
    func isVerified(_ identity: EntryFile.Identity, stamp: EntryFile.Stamp) -> Bool {
        files.withLock { $0[identity] == stamp }
    }

    func remember(_ identity: EntryFile.Identity, stamp: EntryFile.Stamp) {
        files.withLock { files in
            if files.count >= capacity, files[identity] == nil { files.removeAll(keepingCapacity: true) }
            files[identity] = stamp
        }
    }
}

/// `close(2)`, named apart from ``EntryFile/close()``.
private func systemClose(_ fd: Int32) -> Int32 {
    #if canImport(Glibc)
    Glibc.close(fd)
    #else
    Darwin.close(fd)
    #endif
}
