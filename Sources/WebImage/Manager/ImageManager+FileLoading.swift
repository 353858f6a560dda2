import Foundation
import WebImageCoders

extension ImageManager {
    /// Reads a `file://` URL off the caller's thread and decodes it like a download.
    func loadFile(
        url: URL,
        key: String,
        options: ImageOptions,
        context: ImageContext,
        operation: ImageLoadOperation,
        deliver: @escaping @Sendable (Event) -> Void
    ) {
        DispatchQueue.global().async { [self] in
            guard !operation.isCancelled else { return }
            let data: Data
            do throws(WebImageError) {
                data = try Self.readFile(url, limit: imageLoader.configuration.maximumDownloadSize)
            } catch {
                failed.withLock { _ = $0.insert(url) }
                deliver(.failure(error, url))
                return
            }
            let finish: @Sendable (DecodedImage?) -> Void = { [self] image in
                finishDownload(
                    url: url,
                    key: key,
                    image: image,
                    data: data,
                    metadata: DiskCacheMetadata(contentType: ImageFormat(sniffing: data).mimeType),
                    options: options,
                    context: context,
                    deliver: deliver
                )
            }
            guard !options.contains(.avoidDecodeImage) else { return finish(nil) }
            context.decode(data, options: options, isCancelled: { operation.isCancelled }) { [self] result in
                switch result {
                case .success(let image):
                    finish(image)
                case .failure(let error):
                    failed.withLock { _ = $0.insert(url) }
                    deliver(.failure(WebImageError(.badImageData, url: url, message: "\(url.path): \(error)"), url))
                case nil:
                    break  // cancelled: the operation has told its caller
                }
            }
        }
    }

    /// A file URL's bytes, at most `limit` of them. Only regular files (see ``RegularFile``): no
    /// FIFO hang, no device read. A file whose size is over the limit fails before a byte is read.
    static func readFile(_ url: URL, limit: Int64?) throws(WebImageError) -> Data {
        let path = url.path
        func failure(_ failure: RegularFile.Failure) -> WebImageError {
            switch failure {
            case .notRegularFile: WebImageError(.invalidURL, url: url, message: "\(path): \(failure)")
            case .system: WebImageError(.networkError, url: url, message: "\(path): cannot read: \(failure)")
            }
        }
        let file: RegularFile
        do { file = try RegularFile(path: path) } catch { throw failure(error) }
        if let limit, file.size > limit {
            throw WebImageError(
                .downloadTooLarge,
                url: url,
                message: "\(path): the file is too large: its \(file.size) bytes are over the \(limit)-byte limit"
            )
        }
        do { return try file.readAll() } catch { throw failure(error) }
    }

    /// Failures that will not fix themselves (SDWebImage's rules): bad URLs and data, 4xx other
}
