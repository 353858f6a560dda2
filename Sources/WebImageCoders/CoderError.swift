/// Why an image could not be decoded or encoded. Each case names its cause; `code` is stable.
public enum CoderError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The data was empty.
    case emptyData
    /// No registered coder recognises the data (the sniffed format is attached).
    case unsupportedFormat(ImageFormat)
    /// The data ends before the image does.
    case truncatedData(ImageFormat, String)
    /// The codec rejected the data.
    case corruptData(ImageFormat, String)
    /// The image exceeds a decoding limit (pixel count, frame count, animation memory).
    case limitExceeded(ImageFormat, String)
    /// Encoding failed, or the format cannot be written.
    case encodingFailed(ImageFormat, String)
    /// Memory for the pixels could not be allocated.
    case outOfMemory(ImageFormat, String)
    /// A caller's argument cannot be used (bitmaps of different sizes to compare, an empty
    /// quality range).
    case invalidArgument(String)

    /// A stable name for matching and for the CLI's `error.code`.
    public var code: String {
        switch self {
        case .emptyData: "emptyData"
        case .unsupportedFormat: "unsupportedFormat"
        case .truncatedData: "truncatedData"
        case .corruptData: "corruptData"
        case .limitExceeded: "limitExceeded"
        case .encodingFailed: "encodingFailed"
        case .outOfMemory: "outOfMemory"
        case .invalidArgument: "invalidArgument"
        }
    }

    public var description: String {
        switch self {
        case .emptyData: "the data is empty"
        case .unsupportedFormat(.unknown): "the data is not in a recognised image format"
        case .unsupportedFormat(let format): "no decoder for \(format.rawValue) data"
        case .truncatedData(let format, let detail): "truncated \(format.rawValue) data: \(detail)"
        case .corruptData(let format, let detail): "corrupt \(format.rawValue) data: \(detail)"
        case .limitExceeded(let format, let detail): "\(format.rawValue) image exceeds a limit: \(detail)"
        case .encodingFailed(let format, let detail): "cannot encode \(format.rawValue): \(detail)"
        case .outOfMemory(let format, let detail): "out of memory decoding \(format.rawValue): \(detail)"
        case .invalidArgument(let detail): detail
        }
    }
}
