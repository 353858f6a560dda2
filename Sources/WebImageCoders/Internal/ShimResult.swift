import CWebImageShims
import Foundation

/// What the C shims' encoders and decoders hand back, made Swift: the message buffer as text,
/// the status as a ``CoderError``, and a malloc'ed output copied into `Data` and freed.
enum ShimResult {
    /// The shim's message (NUL-terminated) as text.
    static func message(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map(UInt8.init), as: UTF8.self)
    }

    /// An encoder's bytes; its stop or deadline as ``CoderError/limitExceeded(_:_:)``, anything
    /// else as ``CoderError/encodingFailed(_:_:)`` with the shim's message.
    static func encoded(
        _ status: wi_status,
        output: UnsafeMutablePointer<UInt8>?,
        size: Int,
        message: [CChar],
        format: ImageFormat
    ) throws(CoderError) -> Data {
        defer { free(output) }
        let detail = Self.message(message)
        if status == WI_LIMIT_EXCEEDED { throw .limitExceeded(format, detail) }
        guard status == WI_OK, let output else { throw .encodingFailed(format, detail) }
        return Data(bytes: output, count: size)
    }
}
