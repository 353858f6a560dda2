import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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
