import Foundation
import WebImageCoders

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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
            var image: DecodedImage?
            if !options.contains(.avoidDecodeImage) {
                do {
                    image = try (context.coders ?? .shared).decode(data, options: context.decodingOptions(for: options))
                } catch {
                    failed.withLock { _ = $0.insert(url) }
                    deliver(.failure(WebImageError(.badImageData, url: url, message: "\(url.path): \(error)"), url))
                    return
                }
            }
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
    }

    /// A file URL's bytes, at most `limit` of them. Only regular files: the open never blocks (a
    /// FIFO would wait for a writer forever) and devices such as `/dev/zero` are refused. A file
    /// whose size is over the limit fails before a byte is read.
    static func readFile(_ url: URL, limit: Int64?) throws(WebImageError) -> Data {
        let path = url.path
        func failure(_ code: WebImageError.Code, _ reason: String) -> WebImageError {
            WebImageError(code, url: url, message: "\(path): \(reason)")
        }
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw failure(.networkError, "cannot read: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0 else {
            throw failure(.networkError, "cannot read: \(String(cString: strerror(errno)))")
        }
        guard (status.st_mode & S_IFMT) == S_IFREG else {
            let kind =
                switch status.st_mode & S_IFMT {
                case S_IFIFO: "a FIFO"
                case S_IFDIR: "a folder"
                case S_IFCHR, S_IFBLK: "a device"
                case S_IFSOCK: "a socket"
                default: "not a file"
                }
            throw failure(.invalidURL, "not a regular file (\(kind))")
        }
        let size = Int64(status.st_size)
        if let limit, size > limit {
            throw failure(
                .downloadTooLarge,
                "the file is too large: its \(size) bytes are over the \(limit)-byte limit"
            )
        }
        // What fstat reported, no more: a file that grows meanwhile cannot pass the limit.
        var data = Data(count: Int(size))
        var filled = 0
        let readFailed = data.withUnsafeMutableBytes { buffer -> Bool in
            while filled < buffer.count {
                let count = read(fd, buffer.baseAddress! + filled, buffer.count - filled)
                if count < 0 && errno == EINTR { continue }
                if count < 0 { return true }
                if count == 0 { break }
                filled += count
            }
            return false
        }
        if readFailed { throw failure(.networkError, "cannot read: \(String(cString: strerror(errno)))") }
        data.count = filled
        return data
    }

    /// Failures that will not fix themselves (SDWebImage's rules): bad URLs and data, 4xx other
}
