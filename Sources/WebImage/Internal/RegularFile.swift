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
    /// Why a path could not be opened or read.
    package enum Failure: Error, CustomStringConvertible {
        /// `open`/`fstat`/`read` failed with this errno.
        case system(Int32)
        /// The path names something other than a regular file; the value says what, in words.
        case notRegularFile(String)

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
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            let code = errno
            close(descriptor)
            throw .system(code)
        }
        guard (status.st_mode & S_IFMT) == S_IFREG else {
            close(descriptor)
            let kind =
                switch status.st_mode & S_IFMT {
                case S_IFIFO: "a FIFO"
                case S_IFDIR: "a folder"
                case S_IFCHR, S_IFBLK: "a device"
                case S_IFSOCK: "a socket"
                default: "not a file"
                }
            throw .notRegularFile(kind)
        }
        self.descriptor = descriptor
        self.size = Int64(status.st_size)
    }

    deinit { close(descriptor) }

    /// Up to `count` bytes from the start of the file (fewer when it is shorter than that, or
    /// than the size it had at open).
    package func readPrefix(_ count: Int) throws(Failure) -> Data {
        let wanted = Int(min(Int64(max(0, count)), size))
        var data = Data(count: wanted)
        var filled = 0
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
        if let failure { throw .system(failure) }
        data.count = filled
        return data
    }

    /// The whole file, as large as it was at open.
    package func readAll() throws(Failure) -> Data {
        try readPrefix(Int(clamping: size))
    }
}
