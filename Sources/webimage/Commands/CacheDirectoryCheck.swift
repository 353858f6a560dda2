import ArgumentParser
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Makes sure a cache folder can be used before a long-running command starts: created when
/// missing, and writable. A folder that is a file, sits under a file or cannot be written in is a
/// usage error (exit 2) naming the folder and the cause, instead of a server that answers `ok` on
/// `/health` and fetches every source again.
enum CacheDirectoryCheck {
    /// - Throws: `ValidationError` naming `option`, the folder and the cause.
    static func prepare(_ folder: URL, option: String) throws {
        let path = folder.path
        func refuse(_ cause: String) -> ValidationError { ValidationError("\(option) '\(path)': \(cause)") }
        // Walk down from the root so the error names the component at fault.
        var prefix = path.hasPrefix("/") ? "" : FileManager.default.currentDirectoryPath
        for component in path.split(separator: "/") {
            prefix += "/" + component
            var status = stat()
            if stat(prefix, &status) == 0 {
                guard status.st_mode & S_IFMT == S_IFDIR else {
                    throw refuse(prefix == path ? "is a file, not a folder" : "'\(prefix)' is a file, not a folder")
                }
                continue
            }
            guard errno == ENOENT else { throw refuse("cannot read '\(prefix)': \(Self.reason(errno))") }
            guard mkdir(prefix, 0o755) == 0 || errno == EEXIST else {
                throw refuse("cannot create '\(prefix)': \(Self.reason(errno))")
            }
        }
        let probe = path + "/.webimage-write-check-\(getpid())"
        let descriptor = open(probe, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw refuse("cannot write in it: \(Self.reason(errno))") }
        close(descriptor)
        unlink(probe)
    }

    private static func reason(_ code: Int32) -> String { String(cString: strerror(code)) }
}
