import Foundation
import Synchronization
import WebImage
@_spi(WebImageInternals) import WebImageCoders

/// Where an image the server is configured with (the watermark, the fallback image) comes from.
public enum ConfiguredImage: Sendable, Hashable {
    /// The image's bytes (from a file or base64 data).
    case data(Data)
    /// Fetched like a source (the source rules apply), kept in the originals cache.
    case url(URL)
}

/// The watermark image: its bytes, their fingerprint (part of every watermarked result's entity
/// tag), and its decode, made on first use (on the decode queue) and kept. Thread-safe.
final class WatermarkImage: Sendable {
    let data: Data
    let fingerprint: String
    private let decoded = Mutex<Bitmap?>(nil)

    init(_ data: Data) {
        self.data = data
        fingerprint = ImageProxy.fingerprint(data)
    }

    /// The image upright, decoded once; the lock is not held while decoding (two first users
    /// may both decode, and one result is kept).
    /// - Throws: ``ProxyError`` `watermarkFailed` (502) when the bytes are not an image.
    func bitmap() throws(ProxyError) -> Bitmap {
        if let bitmap = decoded.withLock({ $0 }) { return bitmap }
        let image: DecodedImage
        do {
            image = try ImageCodersManager.shared.decode(data, options: ImageDecodingOptions(firstFrameOnly: true))
        } catch {
            throw ProxyError(
                .watermarkFailed,
                "the watermark image cannot be decoded: \(error)"
            )
        }
        let upright = image.orientation == .up ? image.bitmap : image.bitmap.applyingOrientation(image.orientation)
        decoded.withLock { $0 = upright }
        return upright
    }
}

extension ImageProxy {
    /// The watermark image: the configured bytes, or the URL's (fetched through the originals
    /// cache; the decode is reused while the bytes stay the same).
    /// - Throws: ``ProxyError`` 502 `watermarkFailed` when the URL cannot be fetched.
    func watermarkImage() async throws(ProxyError) -> WatermarkImage? {
        guard case .url(let url) = configuration.watermark else { return watermarks.withLock { $0 } }
        let data: Data
        do {
            data = try await fetch(url)
        } catch  where error.code == ProxyError.cancelled.code {
            throw error
        } catch {
            throw ProxyError(
                .watermarkFailed,
                "the watermark image failed: \(error.message)"
            )
        }
        let fingerprint = Self.fingerprint(data)
        return watermarks.withLock { current in
            if let current, current.fingerprint == fingerprint { return current }
            let image = WatermarkImage(data)
            current = image
            return image
        }
    }

    /// The fallback image's bytes: the configured ones, or its URL's (through the originals
    /// cache).
    /// - Throws: ``ProxyError`` 500 `fallbackFailed` when the URL cannot be fetched.
    func fallbackImageData() async throws(ProxyError) -> Data {
        switch configuration.fallbackImage {
        case .data(let data): return data
        case .url(let url):
            do {
                return try await fetch(url)
            } catch  where error.code == ProxyError.cancelled.code {
                throw error
            } catch {
                throw ProxyError(
                    .fallbackFailed,
                    "the fallback image failed: \(error.message)"
                )
            }
        case nil:
            throw ProxyError(.fallbackFailed, "the server has no fallback image")
        }
    }
}
