import Foundation
import Synchronization
@_spi(WebImageInternals) import WebImageCoders

/// Loads `file://` URLs for ``ImageManager``: one read and one decode per file in flight however
/// many callers want it (callers with the same URL and decoding settings share it, as downloads
/// do), reads on a bounded ``ImageWorkQueue`` (never the cooperative pool), decodes on the
/// context's decode queue within its memory budget. Reads keep only a little ahead of the
/// decodes: at most ``maximumFilesInMemory`` files are held at once, from the read's start to the
/// decode's end; later loads wait to be read, the highest priority first.
///
/// Only regular files are read (no FIFO hang, no device read), and a file over
/// ``maximumFileSize`` fails before a byte is read. Every failure is remembered by the manager's
/// failed-URL list except cancellation. Thread-safe; completions run on worker threads.
public final class FileImageLoader: ImageLoading {
    /// The largest file read (`nil`: no limit). Default: the downloader's 128 MiB.
    public let maximumFileSize: Int64?
    /// The most files whose bytes are held at once: being read, waiting for their decode or
    /// decoding. Default: the read queue's width and one per processor (a decode thread's).
    public var maximumFilesInMemory: Int { filesInMemory.limit }
    private let filesInMemory: AdmissionGate
    private let readQueue: ImageWorkQueue
    private let loads = Protected<[LoadKey: FileLoad]>([:])
    private let reads = Atomic<Int>(0)

    /// A loader reading at most `maximumFileSize` bytes per file on `readQueue` (default:
    /// ``ImageWorkQueue/diskReading``, two reads at once, shared with the disk caches), holding at
    /// most `maximumFilesInMemory` files at once (`nil`: the default above; less than 1 counts
    /// as 1).
    public init(
        maximumFileSize: Int64? = ImageDownloader.Configuration.default.maximumDownloadSize,
        readQueue: ImageWorkQueue = .diskReading,
        maximumFilesInMemory: Int? = nil
    ) {
        self.maximumFileSize = maximumFileSize
        self.readQueue = readQueue
        filesInMemory = AdmissionGate(
            limit: maximumFilesInMemory ?? readQueue.width + ProcessInfo.processInfo.activeProcessorCount
        )
    }

    /// What makes two callers one load: the same file, decoded the same way (a read is decoded
    /// once, with its first caller's settings).
    struct LoadKey: Hashable, Sendable {
        var file: ImageDownloadKey
        var decoding: ImageDecodeRequest.Key
    }

    /// Files read so far: coalesced callers share one read.
    public var readCount: Int { reads.load(ordering: .relaxed) }

    /// Loads in flight.
    public var currentLoadCount: Int { loads.withLock { $0.count } }

    /// Files held now (read or being read, not yet decoded); at most ``maximumFilesInMemory``.
    public var filesInMemoryCount: Int { filesInMemory.insideCount }

    /// `file://` URLs with a path.
    public func canRequestImage(for url: URL) -> Bool { url.isFileURL && !url.path.isEmpty }

    public func requestImage(
        with url: URL,
        options: ImageOptions,
        context: ImageContext,
        progress: ImageDownloader.ProgressHandler?,
        completed: @escaping ImageLoaderCompletion
    ) -> (any ImageLoadingToken)? {
        let key = LoadKey(
            file: ImageDownloadKey(url: url, options: options, context: context, unshareable: 0),
            decoding: ImageDecodeRequest(options: options, context: context).key
        )
        let (load, id, isNew) = loads.withLock { loads -> (FileLoad, UInt64, Bool) in
            if let existing = loads[key], let id = existing.subscribe(completed) { return (existing, id, false) }
            let load = FileLoad(url: url, options: options, context: context, first: completed)
            loads[key] = load
            return (load, FileLoad.firstID, true)
        }
        if isNew { start(load, key: key) }
        return FileLoadToken(loader: self, key: key, load: load, id: id)
    }

    /// Every failure but cancellation: a file that could not be read or decoded stays so.
    public func shouldBlockFailedURL(_ url: URL, error: WebImageError) -> Bool { error.code != .cancelled }

    private func start(_ load: FileLoad, key: LoadKey) {
        let priority = ImageWorkQueue.Priority(load.options)
        filesInMemory.enter(priority: priority) { [self] in
            readQueue.enqueue(priority: priority) { [self] in read(load, key: key) }
        }
    }

    /// Reads and decodes the file, holding a place among ``maximumFilesInMemory`` until the
    /// decode is over; every path gives it back once.
    private func read(_ load: FileLoad, key: LoadKey) {
        guard !load.isAbandoned else { return filesInMemory.leave() }
        let url = load.url
        let data: Data
        do throws(WebImageError) {
            reads.add(1, ordering: .relaxed)
            data = try Self.readFile(url, limit: maximumFileSize)
        } catch {
            filesInMemory.leave()
            return finish(load, key: key, image: nil, data: nil, error: error)
        }
        let metadata = DiskCacheMetadata(contentType: ImageFormat(sniffing: data).mimeType)
        guard !load.options.contains(.avoidDecodeImage) else {
            filesInMemory.leave()
            return finish(load, key: key, image: nil, data: data, error: nil, metadata: metadata)
        }
        let isAbandoned: @Sendable () -> Bool = { load.isAbandoned }
        load.context.decode(data, options: load.options, isCancelled: isAbandoned) { [self] result in
            filesInMemory.leave()
            switch result {
            case .success(let image):
                finish(load, key: key, image: image, data: data, error: nil, metadata: metadata)
            case .failure(let error):
                let failure = WebImageError(
                    .badImageData,
                    url: url,
                    message: "\(url.path): \(error)",
                    coderError: error
                )
                finish(load, key: key, image: nil, data: nil, error: failure)
            case nil:
                break  // every caller cancelled; each has had its completion
            }
        }
    }

    /// Delivers the result to every caller, including callers that join while it is being
    /// delivered: the load stays joinable until the last completion has run, so a caller's
    /// completion can cache the image before a newcomer could start a second read. Then later
    /// callers start a new load.
    private func finish(
        _ load: FileLoad,
        key: LoadKey,
        image: DecodedImage?,
        data: Data?,
        error: WebImageError?,
        metadata: DiskCacheMetadata? = nil
    ) {
        while let batch = load.takeSubscribersOrClose() {
            for completed in batch { completed(image, data, error, true, error == nil ? metadata : nil) }
        }
        loads.withLock { loads in
            if loads[key] === load { loads[key] = nil }
        }
    }

    fileprivate func cancel(_ id: UInt64, of load: FileLoad, key: LoadKey) {
        guard let (completed, abandoned) = load.unsubscribe(id) else { return }
        if abandoned {
            loads.withLock { loads in
                if loads[key] === load { loads[key] = nil }
            }
        }
        completed(nil, nil, .cancelled(load.url), true, nil)
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
}

/// One read-and-decode of a file and the callers waiting for it.
private final class FileLoad: Sendable {
    let url: URL
    let options: ImageOptions
    let context: ImageContext
    private let state = Protected(State())

    private struct State {
        var subscribers: [UInt64: ImageLoaderCompletion] = [:]
        var nextID: UInt64 = 0
        /// Closed when the result went out or every caller cancelled: nobody joins any more.
        var closed = false
    }

    static let firstID: UInt64 = 1

    /// A load with its first caller, whose id is ``firstID``.
    init(url: URL, options: ImageOptions, context: ImageContext, first: @escaping ImageLoaderCompletion) {
        self.url = url
        self.options = options
        self.context = context
        state.withLock { state in
            state.nextID = Self.firstID
            state.subscribers[Self.firstID] = first
        }
    }

    /// Whether every caller cancelled before the result: the work can stop.
    var isAbandoned: Bool { state.withLock { $0.closed && $0.subscribers.isEmpty } }

    /// Adds a caller; `nil` when the load is closed (the caller starts a new one).
    func subscribe(_ completed: @escaping ImageLoaderCompletion) -> UInt64? {
        state.withLock { state in
            guard !state.closed else { return nil }
            state.nextID += 1
            state.subscribers[state.nextID] = completed
            return state.nextID
        }
    }

    /// Removes a caller: its completion, and whether it was the last one (the load is then
    /// abandoned). `nil` when it already had its result.
    func unsubscribe(_ id: UInt64) -> (ImageLoaderCompletion, Bool)? {
        state.withLock { state in
            guard let completed = state.subscribers.removeValue(forKey: id) else { return nil }
            if state.subscribers.isEmpty { state.closed = true }
            return (completed, state.subscribers.isEmpty)
        }
    }

    /// The completions waiting now, in arrival order (they are removed), or `nil` when none is
    /// left: the load is then closed.
    func takeSubscribersOrClose() -> [ImageLoaderCompletion]? {
        state.withLock { state in
            guard !state.subscribers.isEmpty else {
                state.closed = true
                return nil
            }
            defer { state.subscribers.removeAll() }
            return state.subscribers.sorted { $0.key < $1.key }.map(\.value)
        }
    }
}

/// A caller's interest in a ``FileImageLoader`` load.
private struct FileLoadToken: ImageLoadingToken {
    weak var loader: FileImageLoader?
    let key: FileImageLoader.LoadKey
    let load: FileLoad
    let id: UInt64

    func cancel() { loader?.cancel(id, of: load, key: key) }
}
