import CWebImageSystem
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension DiskCache {
    // MARK: Removing

    /// Removes the entry for `key` (no error when there is none).
    public func remove(forKey key: String) {
        unlink(path(forKey: key))
        forgetKnownSize()
    }

    /// Removes every entry (and leftover temporary files); other files in the folder stay.
    public func removeAll() {
        defer { forgetKnownSize() }
        scan(includeTemporary: true) { fd, files in
            for file in files { unlinkat(fd, file.name, 0) }
        }
    }

    /// Removes temporary files whose writer is gone: its process no longer runs, or the file is
    /// over a minute old (a write takes milliseconds). Returns how many it removed. ``ImageCache``
    /// runs it on its write queue before its first write to the folder.
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

    // MARK: Size limit

    /// After a write of `written` bytes over an entry of `replaced` bytes: counts the folder's
    /// size (a scan the first time, then by its writes), and when that is over `maxSize`, trims
    /// it as cleanup does, so the limit holds between cleanups. Other processes' writes to a
    /// shared folder are seen at the next scan (a trim, a removal or cleanup recounts).
    func keepWithinSizeLimit(written: Int, replaced: Int) {
        guard let maxSize = configuration.maxSize else { return }
        let counted = knownSize.withLock { size -> Int? in
            guard let current = size else { return nil }
            size = current + written - replaced
            return size
        }
        let total: Int
        if let counted {
            total = counted
        } else {
            total = totalSize
            knownSize.withLock { $0 = total }
        }
        guard total > maxSize else { return }
        removeExpiredEntries()
    }

    func forgetKnownSize() { knownSize.withLock { $0 = nil } }

    /// Removes expired entries, temporary files left by killed writers (see
    /// ``removeOrphanedTemporaryFiles()``),
    /// then, when the folder is over `maxSize`, the oldest entries until it is under half of it.
    @discardableResult
    public func removeExpiredEntries() -> CleanupResult {
        let result = scan(includeTemporary: true) { fd, files in removeExpired(fd: fd, files: files) }
        knownSize.withLock { $0 = result.remainingSize }
        return result
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
            if let maxAge = configuration.maxAge.map({ $0 / .seconds(1) }), now - date(of: file) > maxAge {
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

    struct ScannedFile {
        var name: String
        var times: wi_file_times
        var isTemporary: Bool
    }

    /// Lists our files in the folder with their times and runs `body` with the open directory's
    /// descriptor (for `unlinkat`) and the list.
    func scan<Result>(
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
