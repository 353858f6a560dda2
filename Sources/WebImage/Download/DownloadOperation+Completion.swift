import Foundation
import Logging
import WebImageCoders
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
    /// (the operation stays joinable until its result is out).
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
        case .success((_, let data))
        where !environment.configuration.decodesImages || options.contains(.avoidDecodeImage):
            finish(image: nil, data: data, error: nil)
            done()
        case .success((let response, let data)):
            let logger = environment.configuration.logger
            decode(data, status: response.statusCode, options: options, logger: logger, then: done)
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
        if let modifier = environment.responseModifier {
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
        guard let decryptor = environment.decryptor else { return .success(received) }
        guard let decrypted = decryptor(received, response) else {
            return .failure(failure(.badImageData, "the decryptor could not decrypt the data", status))
        }
        return .success(decrypted)
    }

    /// Decodes `data` on the context's bounded decode queue, off the HTTP task's thread (the
    /// Swift cooperative pool, two threads on a two-core machine): the callers' continuations
    /// keep running, and take each image off the decoders' hands, while others decode.
    private func decode(
        _ data: Data,
        status: Int,
        options: ImageOptions,
        logger: Logger,
        then done: @escaping @Sendable () -> Void
    ) {
        let unwanted: @Sendable () -> Bool = { [weak self] in self?.state.withLock { !$0.machine.isWanted } ?? true }
        context.decode(data, options: options, isCancelled: unwanted) { [self, url] result in
            switch result {
            case .success(let image):
                logger.debug(
                    "download finished",
                    metadata: ["url": "\(url)", "status": "\(status)", "bytes": "\(data.count)"]
                )
                finish(image: image, data: data, error: nil)
            case .failure(let error):
                let message = "\(url): \(error)"
                let failure = WebImageError(
                    .badImageData,
                    url: url,
                    message: message,
                    statusCode: status,
                    coderError: error
                )
                finish(image: nil, data: data, error: failure)
            case nil:
                // Every caller cancelled while the decode waited: nobody to deliver to.
                finish(image: nil, data: nil, error: .cancelled(url))
            }
            done()
        }
    }

    /// A failure of this download: `message` after the URL, with the response's status.
    private func failure(_ code: WebImageError.Code, _ message: String, _ status: Int) -> WebImageError {
        WebImageError(code, url: url, message: "\(url): \(message)", statusCode: status)
    }
}
