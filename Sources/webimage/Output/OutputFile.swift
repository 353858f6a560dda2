import Foundation
import WebImage
import WebImageHTTP

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why an output file was not written, in words ("No space left on device"), not Foundation's
/// "The operation could not be completed" text.
struct OutputFileError: Error {
    var message: String

    /// Writes `data` to a temporary file beside `url`, then renames it into place: a reader never
    /// sees half a file, and a failure leaves nothing behind. Without `replacing`, an existing
    /// file at `url` is left alone and the write fails (the final step is `link`, which never
    /// replaces, so a file made meanwhile is safe too).
    static func writeAtomically(_ data: Data, to url: URL, replacing: Bool = true) throws(OutputFileError) {
        let path = url.path
        let temporary = url.deletingLastPathComponent()
            .appendingPathComponent(".\(url.lastPathComponent).\(getpid()).tmp").path
        func failure(_ step: String) -> OutputFileError {
            OutputFileError(message: "cannot \(step) \(path): \(String(cString: strerror(errno)))")
        }
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw failure("create") }
        if !data.withUnsafeBytes({ writeAll(descriptor, $0) }) {
            let error = failure("write")
            close(descriptor)
            unlink(temporary)
            throw error
        }
        guard close(descriptor) == 0 else {
            let error = failure("write")
            unlink(temporary)
            throw error
        }
        if replacing {
            guard rename(temporary, path) == 0 else {
                let error = failure("replace")
                unlink(temporary)
                throw error
            }
        } else {
            let linked = link(temporary, path)
            let error =
                errno == EEXIST
                ? OutputFileError(message: "\(path) exists; --no-clobber leaves it alone") : failure("create")
            unlink(temporary)
            guard linked == 0 else { throw error }
        }
    }

    /// Makes `folder` and any missing parents (as `mkdir -p`); an existing folder is fine.
    static func createFolder(_ folder: URL) throws(OutputFileError) {
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        } catch {
            throw OutputFileError(message: "cannot create the folder \(folder.path): \(reasonInWords(error))")
        }
    }
}
