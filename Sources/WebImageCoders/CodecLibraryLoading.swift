import CWebImageShims

/// libavif, libheif and libjxl are loaded on first use, not at process start (see
/// `codec_loader.c`): every decode and encode through them asks here first, so a missing or
/// mismatched library fails that call (no decoder for the format; an encode naming the reason)
/// instead of stopping the process. `canDecode` and `canEncode` do not ask (they would load the
/// libraries whenever a manager lists its formats, as for the `Accept` header).
extension wi_codec_library {
    /// Whether the library is loaded, loading it now if it was not tried yet. Thread-safe; after
    /// the first call, a lock and a read.
    var isAvailable: Bool { wi_codec_library_load(self, nil) != 0 }

    /// Why the library cannot be used (not found, or another version than this build's
    /// headers), or `nil` when it can.
    var unavailableReason: String? {
        var message = [CChar](repeating: 0, count: Int(WI_MESSAGE_CAPACITY))
        guard wi_codec_library_load(self, &message) == 0 else { return nil }
        return String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Throws ``CoderError/unsupportedFormat(_:)`` for `format` (no decoder for it) when the
    /// library cannot be used.
    func requireForDecoding(_ format: ImageFormat) throws(CoderError) {
        guard isAvailable else { throw .unsupportedFormat(format) }
    }

    /// Throws ``CoderError/encodingFailed(_:_:)`` for `format`, naming the reason, when the
    /// library cannot be used.
    func requireForEncoding(_ format: ImageFormat) throws(CoderError) {
        if let reason = unavailableReason { throw .encodingFailed(format, reason) }
    }
}
