import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An open regular file, read from its start. The open never blocks (a FIFO would wait for a
/// writer forever) and anything but a regular file (folder, device, socket, FIFO) is refused, so
/// reading a path a caller names can neither hang nor stream `/dev/zero`. Closed on deinit.
package struct RegularFile: ~Copyable {
    /// What a path names when it is not a regular file.
    package enum Kind: CustomStringConvertible, Sendable {
        case fifo, folder, device, socket, other

        init(mode: mode_t) {
            switch mode & S_IFMT {
            case S_IFIFO: self = .fifo
            case S_IFDIR: self = .folder
            case S_IFCHR, S_IFBLK: self = .device
            case S_IFSOCK: self = .socket
            default: self = .other
            }
        }

        package var description: String {
            switch self {
            case .fifo: "a FIFO"
            case .folder: "a folder"
            case .device: "a device"
            case .socket: "a socket"
            case .other: "not a file"
            }
        }
    }

    /// Why a path could not be opened or read.
    package enum Failure: Error, CustomStringConvertible {
        /// `open`/`fstat`/`read` failed with this errno.
        case system(Int32)
        /// The path names something other than a regular file.
        case notRegularFile(Kind)

        package var description: String {
            switch self {
            case .system(let code): String(cString: strerror(code))
            case .notRegularFile(let kind): "not a regular file (\(kind))"
            }
        }
    }

    private let descriptor: Int32
    /// The size `fstat` reported at open. Reads never go past it, so a file growing meanwhile
    /// cannot pass a size check made on it.
    package let size: Int64

    package init(path: String) throws(Failure) {
        let descriptor = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { throw .system(errno) }
        guard let status = fileTypeAndSize(descriptor) else {
            let code = errno
            close(descriptor)
            throw .system(code)
        }
        guard mode_t(status.type) == S_IFREG else {
            close(descriptor)
            throw .notRegularFile(Kind(mode: mode_t(status.type)))
        }
        self.descriptor = descriptor
        self.size = status.size
    }

    deinit { close(descriptor) }

    /// Up to `count` bytes from the start of the file (fewer when it is shorter than that, or
    /// than the size it had at open).
    package func readPrefix(_ count: Int) throws(Failure) -> Data {
        var data = Data()
        try read(into: &data, upTo: count)
        return data
    }

    /// The whole file, as large as it was at open. `prefix`, the file's first bytes read earlier
    /// (``readPrefix(_:)``), is kept and not read again.
    package func readAll(after prefix: Data = Data()) throws(Failure) -> Data {
        var data = prefix
        try read(into: &data, upTo: Int(clamping: size))
        return data
    }

    /// Extends `data` (the file's first `data.count` bytes) to at most `count` bytes.
    private func read(into data: inout Data, upTo count: Int) throws(Failure) {
        let start = data.count
        let wanted = Int(min(Int64(max(start, count)), max(size, Int64(start))))
        data.count = wanted
        var filled = start
        let failure = data.withUnsafeMutableBytes { buffer -> Int32? in
            while filled < buffer.count {
                let read = pread(descriptor, buffer.baseAddress! + filled, buffer.count - filled, off_t(filled))
                if read < 0 && errno == EINTR { continue }
                if read < 0 { return errno }
                if read == 0 { break }
                filled += read
            }
            return nil
        }
        data.count = filled
        if let failure { throw .system(failure) }
    }
}

/// Writes every byte of `bytes` to `descriptor`, retrying after signals; `false` with `errno`
/// set when a write fails.
package func writeAll(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
    var offset = 0
    while offset < bytes.count {
        let written = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
        if written < 0 {
            if errno == EINTR { continue }
            return false
        }
        offset += written
    }
    return true
}
