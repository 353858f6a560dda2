import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A Foundation or system error as the system says it in words ("No such file or directory"),
/// never `Error Domain=NSCocoaErrorDomain Code=4 … UserInfo={…}`: a POSIX error (also one
/// underlying a Cocoa file error) by `strerror`, other Cocoa errors by their description, any
/// other error as it describes itself. For messages that name the file and the step themselves.
package func reasonInWords(_ error: any Error) -> String {
    if let posix = error as? POSIXError { return String(cString: strerror(posix.code.rawValue)) }
    let bridged = error as NSError
    if bridged.domain == NSPOSIXErrorDomain { return String(cString: strerror(Int32(bridged.code))) }
    if bridged.domain == NSCocoaErrorDomain {
        if let underlying = bridged.userInfo[NSUnderlyingErrorKey] as? NSError {
            return reasonInWords(underlying)
        }
        let code: Int32? =
            switch CocoaError.Code(rawValue: bridged.code) {
            case .fileNoSuchFile, .fileReadNoSuchFile: ENOENT
            case .fileReadNoPermission, .fileWriteNoPermission: EACCES
            case .fileWriteOutOfSpace: ENOSPC
            case .fileWriteFileExists: EEXIST
            case .fileWriteVolumeReadOnly: EROFS
            case .fileReadTooLarge: EFBIG
            default: nil
            }
        if let code { return String(cString: strerror(code)) }
        let generic = "The operation could not be completed. "
        let text = bridged.localizedDescription
        return text.hasPrefix(generic) ? String(text.dropFirst(generic.count)) : text
    }
    return String(describing: error)
}
