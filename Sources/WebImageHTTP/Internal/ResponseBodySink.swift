import Foundation
@_spi(WebImageInternals) import WebImageCoders

/// Where a task's response body goes: memory for data tasks, a file for download tasks.
protocol ResponseBodySink: AnyObject, Sendable {
    /// The final response head arrived; returns the byte offset the body continues from
    /// (non-zero only when a download resumes with `206 Partial Content`).
    func begin(_ response: HTTPSession.Response) throws -> Int64
    /// Stores the next body bytes (valid only during the call).
    func append(_ bytes: UnsafeRawBufferPointer) throws
    var metrics: HTTPTaskMetrics? { get set }
}

extension CollectedBody: ResponseBodySink {
    func begin(_ response: HTTPSession.Response) throws -> Int64 {
        reset()
        if let expected = response.expectedContentLength { reserve(Int(min(expected, 64 << 20))) }
        return 0
    }
}

/// Streams a download into `<destination>.download`; `close(success:)` moves it into place. The
/// response's strong `ETag` (else `Last-Modified`) is kept beside a partial file so a later task can resume;
/// a failed download that could not resume (an error status's body, or no validator) leaves nothing.
final class FileBodySink: ResponseBodySink {
    let destination: URL
    let partialURL: URL
    let validatorURL: URL
    private let state = Protected<
        (handle: FileHandle?, metrics: HTTPTaskMetrics?, resumeOffset: Int64, resumable: Bool?)
    >((nil, nil, 0, nil))

    init(destination: URL) {
        self.destination = destination
        partialURL = destination.appendingPathExtension("download")
        validatorURL = destination.appendingPathExtension("download-validator")
    }

    /// `Range`/`If-Range` headers that resume a partial download of `request`, when one exists.
    func resumeHeaders(for request: HTTPSession.Request) -> [(HTTPField.Name, String)] {
        guard
            let size = (try? FileManager.default.attributesOfItem(atPath: partialURL.path)[.size] as? NSNumber)?
                .int64Value,
            size > 0, let validator = try? String(contentsOf: validatorURL, encoding: .utf8),
            !validator.isEmpty
        else { return [] }
        state.withLock { $0.resumeOffset = size }
        return [(.range, "bytes=\(size)-"), (.ifRange, validator)]
    }

    var metrics: HTTPTaskMetrics? {
        get { state.withLock { $0.metrics } }
        set { state.withLock { $0.metrics = newValue } }
    }

    func begin(_ response: HTTPSession.Response) throws -> Int64 {
        let fileManager = FileManager.default
        try fileManager.createDirectory(at: destination.deletingLastPathComponent(), withIntermediateDirectories: true)
        let resuming = response.statusCode == 206 && state.withLock { $0.resumeOffset } > 0
        if !resuming {
            guard fileManager.createFile(atPath: partialURL.path, contents: nil) else {
                throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: partialURL.path])
            }
            state.withLock { $0.resumeOffset = 0 }
        }
        // Keep the validator so an interrupted download of the resource (not of an error page) can
        // resume.
        let validator = (200..<300).contains(response.statusCode) ? response.rangeValidator : nil
        if let validator {
            try Data(validator.utf8).write(to: validatorURL, options: .atomic)
        } else {
            try? fileManager.removeItem(at: validatorURL)
        }
        state.withLock { $0.resumable = validator != nil }
        let handle = try FileHandle(forWritingTo: partialURL)
        if resuming { try handle.seekToEnd() } else { try handle.truncate(atOffset: 0) }
        state.withLock { $0.handle = handle }
        return resuming ? state.withLock { $0.resumeOffset } : 0
    }

    func append(_ bytes: UnsafeRawBufferPointer) throws {
        try append(Data(bytes))
    }

    private func append(_ chunk: Data) throws {
        try state.withLock { try $0.handle?.write(contentsOf: chunk) }
    }

    /// Closes the file; on success moves it into place (replacing any file there). On failure it
    /// keeps the partial file only when a later task can resume it.
    func close(success: Bool) throws {
        let (handle, resumable) = state.withLock { state -> (FileHandle?, Bool?) in
            defer { state.handle = nil }
            return (state.handle, state.resumable)
        }
        try handle?.close()
        let fileManager = FileManager.default
        guard success else {
            // `nil`: no response began, so a partial file from an earlier task is left as it was.
            if resumable == false {
                try? fileManager.removeItem(at: partialURL)
                try? fileManager.removeItem(at: validatorURL)
            }
            return
        }
        if fileManager.fileExists(atPath: destination.path) { try fileManager.removeItem(at: destination) }
        try fileManager.moveItem(at: partialURL, to: destination)
        try? fileManager.removeItem(at: validatorURL)
    }
}
