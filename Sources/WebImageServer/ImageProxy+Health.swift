import Foundation
import Synchronization
@_spi(WebImageInternals) import WebImageCoders

/// The codec self-test behind `/health`: every output format written and read back.
final class CodecSelfTest: Sendable {
    private let attempt = Mutex<Task<Result<[ImageFormat], ProxyError>, Never>?>(nil)

    /// The formats that passed, or the first failure; the test runs once, on the first call, and
    /// again on a later call after a failure.
    func result(on proxy: ImageProxy) async -> Result<[ImageFormat], ProxyError> {
        let task = attempt.withLock { task in
            if let task { return task }
            let started = Task { () -> Result<[ImageFormat], ProxyError> in
                do throws(ProxyError) {
                    return .success(try await proxy.onDecodeQueue { (_) throws(ProxyError) in try Self.check() })
                } catch {
                    return .failure(error)
                }
            }
            task = started
            return started
        }
        let result = await task.value
        if case .failure = result {
            attempt.withLock { if $0 == task { $0 = nil } }
        }
        return result
    }

    /// Encodes a 16×12 image with alpha as each output format and decodes it back.
    private static func check() throws(ProxyError) -> [ImageFormat] {
        var bitmap = Bitmap(width: 16, height: 12)
        for y in 0..<12 {
            for x in 0..<16 { bitmap[x, y] = RGBA(r: UInt8(x * 16), g: UInt8(y * 20), b: 128, a: x < 8 ? 255 : 128) }
        }
        let image = DecodedImage(bitmap: bitmap, format: .png)
        let formats = ProcessingOptions.outputFormats.sorted { $0.rawValue < $1.rawValue }
        for format in formats {
            let decoded: DecodedImage
            do {
                let data = try ImageCodersManager.shared.encode(image, as: format, options: .init(quality: 0.8))
                decoded = try ImageCodersManager.shared.decode(data)
            } catch {
                throw failure("\(format.rawValue) failed its self-test: \(error)")
            }
            guard decoded.format == format, decoded.width == 16, decoded.height == 12 else {
                throw failure(
                    "\(format.rawValue) read back as \(decoded.format.rawValue) \(decoded.width)×\(decoded.height)"
                )
            }
        }
        return formats
    }

    private static func failure(_ message: String) -> ProxyError {
        ProxyError(.codecSelfTestFailed, message)
    }
}

extension ImageProxy {
    /// `/health`: 200 `{"status":"ok","codecs":[…]}` once every output format has been written
    /// and read back (the test runs once, on the library's decode queue); 503 with the failing
    /// codec otherwise, and 503 `shuttingDown` once the server drains (a load balancer's health
    /// check takes the node out). Never cached.
    public func health() async -> ProxyResponse {
        if isDraining { return .failure(.shuttingDown) }
        switch await selfTest.result(on: self) {
        case .success(let formats):
            let object: [String: Any] = ["status": "ok", "codecs": formats.map(\.rawValue)]
            return ProxyResponse(
                status: 200,
                headers: [("Content-Type", "application/json"), ("Cache-Control", "no-cache")],
                body: (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
            )
        case .failure(let error):
            return .failure(error)
        }
    }
}
