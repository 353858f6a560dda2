import Foundation
import Synchronization
@_spi(WebImageInternals) import WebImageCoders

/// Loads `data:` URLs (RFC 2397, `data:image/png;base64,…`) for ``ImageManager``: the bytes are
/// in the URL, so there is no network and no disk entry (the manager keeps the image in memory
/// only); the decode runs on the context's decode queue like any other. A URL whose bytes are
/// over ``maximumSize``, that is not `data:[type][;base64],payload`, or whose bytes are not an
/// image fails, and the failure is remembered (it would fail the same way again).
/// Thread-safe; completions run on worker threads.
public final class DataURLLoader: ImageLoading {
    /// The largest payload decoded (`nil`: no limit). Default: the downloader's 128 MiB.
    public let maximumSize: Int64?

    public init(maximumSize: Int64? = ImageDownloader.Configuration.default.maximumDownloadSize) {
        self.maximumSize = maximumSize
    }

    /// `data:` URLs.
    public func canRequestImage(for url: URL) -> Bool { url.scheme?.lowercased() == "data" }

    public func requestImage(
        with url: URL,
        options: ImageOptions,
        context: ImageContext,
        progress: ImageDownloader.ProgressHandler?,
        completed: @escaping ImageLoaderCompletion
    ) -> (any ImageLoadingToken)? {
        let token = DataURLToken(url: url, completed: completed)
        let data: Data
        do throws(WebImageError) {
            data = try Self.payload(of: url, limit: maximumSize)
        } catch {
            token.finish(nil, nil, error)
            return token
        }
        let isCancelled: @Sendable () -> Bool = { token.isCancelled }
        context.decode(data, options: options, isCancelled: isCancelled) { result in
            switch result {
            case .success(let image): token.finish(image, data, nil)
            case .failure(let error):
                token.finish(
                    nil,
                    nil,
                    WebImageError(
                        .badImageData,
                        url: url,
                        message: "the data: URL is not an image: \(error)",
                        coderError: error
                    )
                )
            case nil: break  // cancelled: the token has answered
            }
        }
        return token
    }

    /// Every failure but cancellation: the same URL holds the same bytes.
    public func shouldBlockFailedURL(_ url: URL, error: WebImageError) -> Bool { error.code != .cancelled }

    /// No: the URL carries its bytes, so a disk entry would only copy them (kept in memory).
    public func storesOnDisk(_ url: URL) -> Bool { false }

    /// The bytes a `data:` URL carries: base64 when its media type part ends in `;base64`, else
    /// percent-encoded text.
    /// - Throws: ``WebImageError`` `invalidURL` for a URL without the comma or with bad base64,
    ///   `downloadTooLarge` past `limit`.
    static func payload(of url: URL, limit: Int64?) throws(WebImageError) -> Data {
        let text = url.absoluteString
        guard let comma = text.firstIndex(of: ","), text.lowercased().hasPrefix("data:") else {
            throw .invalidURL(String(text.prefix(64)), reason: "a data: URL is data:[type][;base64],payload")
        }
        let header = text[text.index(text.startIndex, offsetBy: 5)..<comma].lowercased()
        let body = text[text.index(after: comma)...]
        // Base64 takes 4 characters per 3 bytes: the length alone says whether it is too large.
        if let limit, Int64(body.utf8.count) / 4 * 3 > limit {
            throw WebImageError(.downloadTooLarge, url: url, message: "the data: URL carries more than \(limit) bytes")
        }
        let data: Data?
        if header.hasSuffix(";base64") {
            // Whitespace may wrap the payload; anything else outside base64 is an error.
            let plain = (String(body).removingPercentEncoding ?? String(body)).filter { !$0.isWhitespace }
            let padded = plain + String(repeating: "=", count: (4 - plain.count % 4) % 4)
            data = Data(base64Encoded: padded)
        } else {
            data = percentDecoded(body)
        }
        guard let data else {
            throw .invalidURL(String(text.prefix(64)), reason: "the data: URL's payload does not decode")
        }
        if let limit, Int64(data.count) > limit {
            throw WebImageError(.downloadTooLarge, url: url, message: "the data: URL carries more than \(limit) bytes")
        }
        return data
    }
}

extension DataURLLoader {
    /// `%XX` escapes as bytes, every other character as its UTF-8; `nil` for a broken escape.
    static func percentDecoded(_ text: Substring) -> Data? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                return nil
            }
            bytes.append(high << 4 | low)
        }
        return Data(bytes)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

/// One caller of a `data:` load: its completion runs exactly once, with the result or, when
/// cancelled first, `cancelled`.
private final class DataURLToken: ImageLoadingToken {
    let url: URL
    private let completion: Mutex<ImageLoaderCompletion?>

    init(url: URL, completed: @escaping ImageLoaderCompletion) {
        self.url = url
        completion = Mutex(completed)
    }

    var isCancelled: Bool { completion.withLock { $0 == nil } }

    func finish(_ image: DecodedImage?, _ data: Data?, _ error: WebImageError?) {
        // Taken under the lock, called outside it.
        guard
            let completed = completion.withLock({ value in
                defer { value = nil }
                return value
            })
        else { return }
        completed(image, data, error, true, nil)
    }

    func cancel() { finish(nil, nil, .cancelled(url)) }
}
