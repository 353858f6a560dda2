import WebImage
@_spi(WebImageInternals) import WebImageCoders

/// The request log of `webimage serve`: lines written to standard error, in order, by a thread of
/// their own. A request only hands its line over, so a reader of standard error that stops
/// reading (a full pipe, a paused terminal, a stalled log shipper) holds up the log and never a
/// request: written from the request's task, a blocked `write(2)` would stall the cooperative
/// pool and with it every request, `/health` included.
///
/// At most ``capacity`` bytes wait; a line that does not fit is dropped and counted, and the
/// next line written is preceded by ``droppedNotice`` naming how many went. Thread-safe.
final class RequestLogWriter: Sendable {
    /// The most bytes of lines waiting to be written (default 1 MiB: 3,000 to 25,000 lines).
    let capacity: Int
    /// The line that says `count` lines were dropped (without its newline).
    let droppedNotice: @Sendable (_ count: Int) -> String
    private let stream: StandardStream
    private let queue = ImageWorkQueue(width: 1, name: "log")
    private let backlog = Protected(Backlog())

    private struct Backlog {
        /// Bytes accepted and not yet written.
        var bytes = 0
        /// Lines dropped since the last notice.
        var dropped = 0
    }

    init(
        stream: StandardStream = .error,
        capacity: Int = 1 << 20,
        droppedNotice: @escaping @Sendable (_ count: Int) -> String
    ) {
        self.stream = stream
        self.capacity = capacity
        self.droppedNotice = droppedNotice
    }

    /// Hands `line` (without its newline) to the writer; drops it when ``capacity`` is reached.
    func write(_ line: String) {
        let text = line + "\n"
        let size = text.utf8.count
        let accepted = backlog.withLock { backlog in
            guard backlog.bytes + size <= capacity else {
                backlog.dropped += 1
                return false
            }
            backlog.bytes += size
            return true
        }
        guard accepted else { return }
        _ = queue.enqueue { [self] in
            writeDroppedNotice()
            stream.write(text)
            backlog.withLock { $0.bytes -= size }
        }
    }

    /// Waits until every line accepted so far is written (and the count of any dropped since),
    /// or `timeout` has passed: standard error may never be read again. Whether it finished.
    func flush(timeout: Duration) async -> Bool {
        let finished = Protected<HandOffContinuation<Bool, Never>?>(nil)
        let timer = Protected<Task<Void, Never>?>(nil)
        let result = await withHandOffContinuation { continuation in
            finished.withLock { $0 = continuation }
            _ = queue.enqueue { [self] in
                writeDroppedNotice()
                finished.withLock { $0.take() }?.resume(returning: true)
            }
            timer.withLock {
                $0 = Task {
                    try? await Task.sleep(for: timeout)
                    finished.withLock { $0.take() }?.resume(returning: false)
                }
            }
        }
        timer.withLock { $0 }?.cancel()
        return result
    }

    /// On the writer's thread: the notice for lines dropped since the last one, if any.
    private func writeDroppedNotice() {
        let dropped = backlog.withLock { backlog in
            defer { backlog.dropped = 0 }
            return backlog.dropped
        }
        if dropped > 0 { stream.write(droppedNotice(dropped) + "\n") }
    }
}
