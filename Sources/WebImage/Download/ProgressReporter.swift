import Foundation
import WebImageCoders
import WebImageHTTP

/// Turns an HTTP task's chunks into throttled progress reports.
final class ProgressReporter: HTTPSessionTaskByteDelegate {
    let operation: DownloadOperation
    let interval: Duration
    let skipsBody: @Sendable (HTTPSession.Response) -> Bool
    let events: @Sendable (ImageDownloaderEvent) -> Void
    /// Bytes an earlier attempt received, which this one continues.
    let offset: Int64
    /// Whether the session's response cache may keep the response (``ImageOptions/useURLCache``).
    let storesInURLCache: Bool

    func task(_ task: HTTPSessionTask, willCacheResponse proposed: HTTPCachedResponse) -> HTTPCachedResponse? {
        storesInURLCache ? proposed : nil
    }
    /// The body's first bytes until they tell the image's header; `nil` once they did, or
    /// after 256 KiB without one.
    private let probe = Protected<Data?>(Data())

    /// The header, the first time the bytes so far give one. The first chunk is read in place
    /// and kept (copied) only when it does not tell the header yet; later ones are appended to
    /// the kept bytes. Chunks come one at a time (the task's receive loop).
    private func probeHeader(_ chunk: UnsafeRawBufferPointer) -> ImageHeader? {
        guard !chunk.isEmpty, var bytes = probe.withLock({ $0 }) else { return nil }
        let header: ImageHeader?
        if bytes.isEmpty {
            header = chunk.baseAddress.flatMap { base in
                // No copy: the Data lives only for the parse (ImageHeader keeps no bytes).
                let mutable = UnsafeMutableRawPointer(mutating: base)
                return ImageHeader(Data(bytesNoCopy: mutable, count: chunk.count, deallocator: .none))
            }
            bytes = header == nil && chunk.count <= 256 << 10 ? Data(chunk) : Data()
        } else {
            bytes.append(contentsOf: chunk)
            header = ImageHeader(bytes)
        }
        // Done once a header is found, or after 256 KiB without one.
        let done = header != nil || bytes.isEmpty || bytes.count > 256 << 10
        probe.withLock { $0 = done ? nil : bytes }
        return header
    }

    init(
        operation: DownloadOperation,
        interval: Duration,
        skipsBody: @escaping @Sendable (HTTPSession.Response) -> Bool,
        events: @escaping @Sendable (ImageDownloaderEvent) -> Void,
        offset: Int64,
        storesInURLCache: Bool
    ) {
        self.storesInURLCache = storesInURLCache
        self.operation = operation
        self.interval = interval
        self.skipsBody = skipsBody
        self.events = events
        self.offset = offset
    }

    func task(_ task: HTTPSessionTask, didReceive response: HTTPSession.Response) async -> HTTPResponseDisposition {
        events(.receivedResponse(operation.url, response))
        return skipsBody(response) ? .finish : .allow
    }

    func task(_ task: HTTPSessionTask, didReceive data: Data) {
        data.withUnsafeBytes { self.task(task, didReceiveBytes: $0) }
    }

    func task(_ task: HTTPSessionTask, didReceiveBytes data: UnsafeRawBufferPointer) {
        operation.didReceive(data)
        if offset == 0, let header = probeHeader(data) {
            operation.deliverInfo(header)
            events(.receivedImageInfo(operation.url, header))
        }
        operation.report(
            received: offset + task.countOfBytesReceived,
            expected: task.countOfBytesExpectedToReceive.map { offset + $0 } ?? 0,
            final: false,
            interval: interval
        )
    }
}
