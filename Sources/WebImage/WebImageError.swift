import Foundation
import WebImageCoders
import WebImageHTTP

/// Why an image load failed. `code` is stable (its raw value is the CLI's `error.code`); the
/// message names the URL.
public struct WebImageError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure; the raw value is the CLI's `error.code`.
    ///
    /// A struct with a static member per kind (AsyncHTTPClient's pattern), not an enum: new kinds
    /// can be added without breaking a client's `switch`, which therefore needs a `default`.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        /// The name, as the CLI prints it (`invalidURL`).
        public let rawValue: String

        /// The kind named `rawValue`.
        public init(rawValue: String) { self.rawValue = rawValue }

        public var description: String { rawValue }

        /// The URL is missing, empty, or not one the loader handles.
        public static let invalidURL = Code(rawValue: "invalidURL")
        /// The data is not a decodable image (or has no pixels).
        public static let badImageData = Code(rawValue: "badImageData")
        /// The server (or the cached data) says the cached image is still current.
        public static let cacheNotModified = Code(rawValue: "cacheNotModified")
        /// The URL failed before and is not retried without `retryFailed`.
        public static let blackListed = Code(rawValue: "blackListed")
        /// The download operation could not be created or started.
        public static let invalidDownloadOperation = Code(rawValue: "invalidDownloadOperation")
        /// The server answered with a status the downloader does not accept.
        // swift-format-ignore: DontRepeatTypeInStaticProperties
        // (the name is the CLI's and SDWebImage's error code)
        public static let invalidDownloadStatusCode = Code(rawValue: "invalidDownloadStatusCode")
        /// The response modifier rejected the response.
        public static let invalidDownloadResponse = Code(rawValue: "invalidDownloadResponse")
        /// The content type is not acceptable.
        public static let invalidDownloadContentType = Code(rawValue: "invalidDownloadContentType")
        /// The caller cancelled.
        public static let cancelled = Code(rawValue: "cancelled")
        /// The response is larger than the downloader's
        /// ``ImageDownloader/Configuration/maximumDownloadSize``; the download stopped there.
        public static let downloadTooLarge = Code(rawValue: "downloadTooLarge")
        /// The network load failed (timeout, connection, TLS…); `underlying` says how.
        public static let networkError = Code(rawValue: "networkError")
        /// The image is not cached and the load may not use the network (`fromCacheOnly`, or the
        /// manager's `shouldDownloadImage` said no).
        public static let cacheMiss = Code(rawValue: "cacheMiss")
        /// The image loaded but could not be stored on disk (read-only folder, full file system);
        /// only with ``ImageOptions/waitStoreCache``, which waits for the write. The message names
        /// the file and the system's reason.
        public static let cacheStoreFailed = Code(rawValue: "cacheStoreFailed")
    }

    /// What kind of failure this is.
    public let code: Code
    /// The URL being loaded, when there was one.
    public let url: URL?
    /// A sentence naming the input and the cause.
    public let message: String
    /// The HTTP status, when a response arrived.
    public let statusCode: Int?
    /// The transport error, for `networkError` (and status errors).
    public let underlying: HTTPSessionError?
    /// The decoder's error, for `badImageData` from a decode: its `code` says what
    /// was wrong with the data (truncated, too large, unsupported…).
    public let coderError: CoderError?

    /// An error of `code` for `url`; `message` should name the URL and the cause.
    public init(
        _ code: Code,
        url: URL?,
        message: String,
        statusCode: Int? = nil,
        underlying: HTTPSessionError? = nil,
        coderError: CoderError? = nil
    ) {
        self.code = code
        self.url = url
        self.message = message
        self.statusCode = statusCode
        self.underlying = underlying
        self.coderError = coderError
    }

    /// The message.
    public var description: String { message }

    /// The error a caller gets when its load was cancelled.
    public static func cancelled(_ url: URL?) -> WebImageError {
        WebImageError(.cancelled, url: url, message: "\(url?.absoluteString ?? "(no URL)"): cancelled")
    }

    /// The error for text that is not a loadable URL (the text is quoted in the message).
    public static func invalidURL(_ text: String) -> WebImageError { invalidURL(text, reason: nil) }

    /// `invalidURL` for `text`, saying why when the reason is known (`port 70000 is not …`).
    public static func invalidURL(_ text: String, reason: String?) -> WebImageError {
        WebImageError(
            .invalidURL,
            url: nil,
            message: "\(text.isEmpty ? "(empty)" : text): not a valid image URL\(reason.map { " (\($0))" } ?? "")"
        )
    }
}
