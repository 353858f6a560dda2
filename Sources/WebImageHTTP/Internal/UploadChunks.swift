import Foundation
import NIOCore
import NIOFoundationCompat

/// A request body as an async sequence of 64 KB buffers; each buffer AsyncHTTPClient pulls is
/// reported as sent (the client pulls as the socket accepts, so this tracks real progress).
struct UploadChunks: AsyncSequence, Sendable {
    enum Source: Sendable {
        case data(Data)
        case file(URL)
    }

    typealias Element = ByteBuffer

    let source: Source
    let onProgress: @Sendable (Int64) -> Void
    static let chunkSize = 64 * 1024

    struct AsyncIterator: AsyncIteratorProtocol {
        let source: Source
        let onProgress: @Sendable (Int64) -> Void
        var offset = 0
        var handle: FileHandle?

        mutating func next() async throws -> ByteBuffer? {
            let chunk: Data
            switch source {
            case .data(let data):
                guard offset < data.count else { return nil }
                let end = Swift.min(data.count, offset + UploadChunks.chunkSize)
                chunk = data.subdata(in: data.startIndex + offset..<data.startIndex + end)
            case .file(let url):
                if handle == nil { handle = try FileHandle(forReadingFrom: url) }
                guard let read = try handle?.read(upToCount: UploadChunks.chunkSize), !read.isEmpty else {
                    try handle?.close()
                    return nil
                }
                chunk = read
            }
            offset += chunk.count
            onProgress(Int64(offset))
            return ByteBuffer(data: chunk)
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(source: source, onProgress: onProgress) }
}
