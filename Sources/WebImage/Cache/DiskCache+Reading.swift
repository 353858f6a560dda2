import CWebImageSystem
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension DiskCache {
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
            guard let (data, payload) = layout(of: file) else {
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

    /// The data and payload lengths, from the file's last bytes alone; `nil` when it is no entry.
    private func layout(of file: EntryFile) -> (data: Int, payload: Int)? {
        var footer = [UInt8](repeating: 0, count: DiskCacheEntryFormat.footerSize)
        guard footer.withUnsafeMutableBytes({ file.read(into: $0, at: file.size - DiskCacheEntryFormat.footerSize) })
        else { return nil }
        return footer.withUnsafeBytes { DiskCacheEntryFormat.dataLength(fileSize: file.size, footer: $0) }
    }

    /// Entries up to this size are read in one call.
    static let wholeReadLimit = 4 << 20

    /// Removes the damaged or foreign file at `path`, unless another writer has replaced it
    /// meanwhile (a different file now has the name).
    private func removeDamaged(path: String, identity: EntryFile.Identity) {
        guard EntryFile.Identity(linkAtPath: path) == identity else { return }
        unlink(path)
    }

    func entry(atPath path: String, key: String? = nil) -> DiskCacheEntry? {
        guard let file = EntryFile(path: path, onForeign: { _ in }) else { return nil }
        defer { file.close() }
        guard let (dataLength, payloadLength) = layout(of: file) else { return nil }
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
}
