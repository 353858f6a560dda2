import Foundation

/// An image file format, recognised from the first bytes of the data (never from a file name).
///
/// ```swift
/// let format = ImageFormat(sniffing: data)   // .jpeg, .png, …, or .unknown
/// ```
///
/// APNG reports `.png` (with ``ImageFormatDetails/isAnimated``), and every WebP flavour reports
/// `.webp`. Sniffing reads at most a few kilobytes and never fails.
public enum ImageFormat: String, Sendable, Hashable, CaseIterable, Codable {
    case jpeg, png, gif, webp, heic, heif, avif, tiff, bmp, ico, svg, pdf, jxl, unknown

    /// Recognises the format of `data` from its signature.
    public init(sniffing data: Data) {
        self = ImageFormatDetails(sniffing: data).format
    }

    /// The IANA media type, such as `image/jpeg`; `application/octet-stream` for `.unknown`.
    public var mimeType: String {
        switch self {
        case .jpeg: "image/jpeg"
        case .png: "image/png"
        case .gif: "image/gif"
        case .webp: "image/webp"
        case .heic: "image/heic"
        case .heif: "image/heif"
        case .avif: "image/avif"
        case .tiff: "image/tiff"
        case .bmp: "image/bmp"
        case .ico: "image/vnd.microsoft.icon"
        case .svg: "image/svg+xml"
        case .pdf: "application/pdf"
        case .jxl: "image/jxl"
        case .unknown: "application/octet-stream"
        }
    }

    /// The usual file extension without a dot, such as `jpg`; empty for `.unknown`.
    public var fileExtension: String {
        switch self {
        case .jpeg: "jpg"
        case .tiff: "tiff"
        case .unknown: ""
        default: rawValue
        }
    }

    /// The format for a media type such as `image/png; charset=…`, or `nil` when it names none.
    public init?(mimeType: String) {
        let essence = mimeType.split(separator: ";").first.map {
            $0.trimmingCharacters(in: .whitespaces).lowercased()
        }
        switch essence {
        case "image/jpeg", "image/jpg", "image/pjpeg": self = .jpeg
        case "image/png", "image/apng": self = .png
        case "image/x-icon", "image/vnd.microsoft.icon": self = .ico
        case "image/heic-sequence": self = .heic
        case "image/heif-sequence": self = .heif
        case "image/avif-sequence": self = .avif
        case let essence?:
            guard let match = ImageFormat.allCases.first(where: { $0 != .unknown && $0.mimeType == essence })
            else { return nil }
            self = match
        case nil: return nil
        }
    }
}

/// What sniffing learned beyond the format: animation and the WebP encoding.
public struct ImageFormatDetails: Sendable, Hashable {
    /// How a WebP file stores its pixels.
    public enum WebPEncoding: String, Sendable, Hashable {
        /// `VP8 `: lossy.
        case lossy
        /// `VP8L`: lossless.
        case lossless
        /// `VP8X`: the extended container (alpha, animation, metadata).
        case extended
    }

    /// The container format.
    public var format: ImageFormat
    /// The header announces an animation (APNG `acTL`, WebP `VP8X` animation flag, a GIF with a
    /// second image descriptor seen in the sniffed bytes).
    public var isAnimated: Bool
    /// The header announces an alpha channel, where the header can say so (PNG, WebP).
    public var hasAlpha: Bool?
    /// For WebP, the chunk that holds the image.
    public var webpEncoding: WebPEncoding?

    /// Inspects the first bytes of `data`.
    public init(sniffing data: Data) {
        self = data.withUnsafeBytes { FormatSniffer(bytes: $0).sniff() }
    }

    init(format: ImageFormat, isAnimated: Bool = false, hasAlpha: Bool? = nil, webpEncoding: WebPEncoding? = nil) {
        self.format = format
        self.isAnimated = isAnimated
        self.hasAlpha = hasAlpha
        self.webpEncoding = webpEncoding
    }
}
