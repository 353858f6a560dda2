import Foundation
import Synchronization

/// A fresh directory under the system temporary directory, removed by `remove()`.
///
/// A disk cache's queued write can re-create a folder a test has just removed (a cache puts its
/// folder back when it is missing), so removed folders are removed once more when the test
/// process exits.
public struct TemporaryDirectory: Sendable {
    public let url: URL

    public init(prefix: String = "webimage-test") throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    public func file(_ name: String) -> URL { url.appendingPathComponent(name) }

    public func remove() {
        try? FileManager.default.removeItem(at: url)
        RemovedFolders.shared.add(url)
    }
}

/// The folders `TemporaryDirectory.remove()` removed, removed again at exit.
private final class RemovedFolders: Sendable {
    static let shared = RemovedFolders()

    private let urls = Mutex<[URL]>([])

    private init() {
        atexit { RemovedFolders.shared.removeAll() }
    }

    func add(_ url: URL) { urls.withLock { $0.append(url) } }

    private func removeAll() {
        for url in urls.withLock({ $0 }) { try? FileManager.default.removeItem(at: url) }
    }
}
