import Foundation
import Logging
@_spi(WebImageInternals) import WebImageCoders
import WebImageHTTP

/// The end of a download, in order: the transfer's error or response is judged, the body
/// becomes the image's bytes (the decryptor), and the bytes are decoded on the context's queue.
extension DownloadOperation {
    /// What the last attempt of a download ended with.
    struct Transfer: Sendable {
        var data: Data
        var response: HTTPSession.Response?
        var error: HTTPSessionError?
    }

    /// Delivers the end of `transfer` to every caller: a failure, the bytes (without decoding),
    /// or the decoded image. `done` runs once it is delivered; a decode calls it when it ends
    /// (the operation stays joinable until the result is in).
    func complete(
        _ transfer: Transfer,
        options: ImageOptions,
        in environment: ImageDownloadEnvironment,
        then done: @escaping @Sendable () -> Void
    ) {
        let outcome = accepted(transfer, in: environment).flatMap { response in
            imageBytes(transfer.data, of: response, options: options, in: environment).map { (response, $0) }
        }
        switch outcome {
        case .failure(let error):
            finish(image: nil, data: nil, error: error)
            done()
        case .success((_, let data)) where !environment.configuration.decodesImages:
            finish(image: nil, data: data, error: nil)
            done()
        case .success((let response, let data)):
            environment.configuration.logger.debug(
                "download finished",
                metadata: ["url": "\(url)", "status": "\(response.statusCode)", "bytes": "\(data.count)"]
            )
            decodeForCallers(data, status: response.statusCode, then: done)
        }
    }

    /// The response, once the transfer's error, the response modifier, the status and the
    /// content type allow it.
    private func accepted(
        _ transfer: Transfer,
        in environment: ImageDownloadEnvironment
    ) -> Result<HTTPSession.Response, WebImageError> {
        let configuration = environment.configuration
        if let error = transfer.error {
            if error.code == .cancelled { return .failure(.cancelled(url)) }
            configuration.logger.notice("download failed", metadata: ["url": "\(url)", "error": "\(error.message)"])
            let code: WebImageError.Code = error.code == .responseTooLarge ? .downloadTooLarge : .networkError
            return .failure(
                WebImageError(code, url: url, message: error.message, statusCode: error.statusCode, underlying: error)
            )
        }
        guard var response = transfer.response else { return .failure(.cancelled(url)) }
        state.withLock { $0.response = response }
        for modifier in [context.responseModifier, environment.responseModifier].compactMap({ $0 }) {
            guard let modified = modifier(response) else {
                return .failure(
                    failure(
                        .invalidDownloadResponse,
                        "the response modifier rejected the response",
                        response.statusCode
                    )
                )
            }
            response = modified
            state.withLock { $0.response = modified }
        }
        let status = response.statusCode
        if status == 304 { return .failure(failure(.cacheNotModified, "not modified (304)", status)) }
        // A redirect that reached us was not followed (refused target, no Location, or a delegate
        // declined it): its body is never the image.
        if (300..<400).contains(status) {
            let target =
                response.headers[values: .location].first.map { "to \($0.prefix(200)) " } ?? "without a Location "
            return .failure(
                failure(.invalidDownloadStatusCode, "HTTP \(status) redirect \(target)not followed", status)
            )
        }
        guard configuration.acceptableStatusCodes.contains(status) else {
            return .failure(failure(.invalidDownloadStatusCode, "HTTP status \(status)", status))
        }
        if let acceptable = configuration.acceptableContentTypes, let mime = response.mimeType,
            !acceptable.contains(mime)
        {
            return .failure(failure(.invalidDownloadContentType, "unacceptable content type \(mime)", status))
        }
        return .success(response)
    }

    /// The image's bytes from an accepted body: the final progress report, the
    /// `ignoreCachedResponse` check, then the decryptor.
    private func imageBytes(
        _ received: Data,
        of response: HTTPSession.Response,
        options: ImageOptions,
        in environment: ImageDownloadEnvironment
    ) -> Result<Data, WebImageError> {
        let status = response.statusCode
        report(
            received: Int64(received.count),
            expected: response.expectedContentLength ?? Int64(received.count),
            final: true
        )
        if options.contains(.ignoreCachedResponse), let cached = context.cachedResponse?.data, cached == received {
            return .failure(failure(.cacheNotModified, "the data equals the cached data", status))
        }
        var bytes = received
        for decryptor in [context.decryptor, environment.decryptor].compactMap({ $0 }) {
            guard let decrypted = decryptor(bytes, response) else {
                return .failure(failure(.badImageData, "the decryptor could not decrypt the data", status))
            }
            bytes = decrypted
        }
        return .success(bytes)
    }

    /// Decodes `data` once for each distinct setting the waiting callers want (their
    /// ``ImageDecodeRequest``s), one after another on the caller's context's bounded decode
    /// queue, off the HTTP task's thread (the Swift cooperative pool), then delivers each caller
    /// its own image. A setting no caller wants any longer by its turn is skipped.
    private func decodeForCallers(_ data: Data, status: Int, then done: @escaping @Sendable () -> Void) {
        let next = state.withLock { state -> ImageDecodeRequest? in
            let missing = state.machine.waitingHandlers.lazy.map { $0.decoding }.first {
                !$0.key.undecoded && state.decoded[$0.key] == nil
            }
            if missing == nil { state.decodingClosed = true }
            return missing
        }
        guard let next else {
            finish(decodedFrom: data)
            return done()
        }
        let key = next.key
        let unwanted: @Sendable () -> Bool = { [weak self] in
            self?.state.withLock { state in !state.machine.waitingHandlers.contains { $0.decoding.key == key } }
                ?? true
        }
        next.context.decode(data, options: next.options, isCancelled: unwanted) { [self, url] result in
            if let result {
                let decoded = result.mapError { error in
                    WebImageError(
                        .badImageData,
                        url: url,
                        message: "\(url): \(error)",
                        statusCode: status,
                        coderError: error
                    )
                }
                state.withLock { $0.decoded[key] = decoded }
            }
            decodeForCallers(data, status: status, then: done)
        }
    }

    /// A failure of this download: `message` after the URL, with the response's status.
    private func failure(_ code: WebImageError.Code, _ message: String, _ status: Int) -> WebImageError {
        WebImageError(code, url: url, message: "\(url): \(message)", statusCode: status)
    }
}
