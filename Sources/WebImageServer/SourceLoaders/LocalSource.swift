import Foundation
import WebImage
@_spi(WebImageInternals) import WebImageCoders

/// `local:///path` sources: files under one folder (imgproxy's `IMGPROXY_LOCAL_FILESYSTEM_ROOT`).
/// No source leaves the folder: `..` segments are refused, and the path is resolved (symbolic
/// links followed) and must still be inside the folder's own resolved path. Files are read on
/// the library's disk-reading queue, never on the caller's thread pool.
public struct LocalSourceRoot: Sendable, Hashable {
    /// The folder, resolved (no symbolic links), without a trailing `/`.
    public let path: String

    /// The folder at `path`.
    /// - Throws: ``ProxyError`` naming the folder when it does not exist or is not a folder.
    public init(_ path: String) throws(ProxyError) {
        guard let resolved = Self.resolved(path) else {
            throw ProxyError(.badConfiguration, "--local-root '\(path)' does not exist")
        }
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: resolved, isDirectory: &isFolder), isFolder.boolValue else {
            throw ProxyError(.badConfiguration, "--local-root '\(path)' is not a folder")
        }
        self.path = resolved == "/" ? "" : resolved
    }

    /// The file a `local://` URL names, checked to be inside the folder.
    /// - Throws: ``ProxyError`` 403 for a path that leaves the folder, 404 for one that does
    ///   not exist.
    func file(for url: URL) throws(ProxyError) -> String {
        let named = ((url.host.map { "/" + $0 } ?? "") + url.path).removingPercentEncoding ?? url.path
        let segments = named.split(separator: "/", omittingEmptySubsequences: true)
        guard !segments.contains(".."), !named.contains("\0") else {
            throw .sourceNotAllowed("the local path '\(named.prefix(200))' leaves --local-root")
        }
        guard !segments.isEmpty else { throw .badURL("the local source names no file") }
        let candidate = path + "/" + segments.joined(separator: "/")
        guard let resolved = Self.resolved(candidate) else {
            throw ProxyError(
                .sourceNotFound,
                "no file at local path '\(named.prefix(200))'"
            )
        }
        guard resolved.hasPrefix(path + "/") else {
            throw .sourceNotAllowed("the local path '\(named.prefix(200))' leads out of --local-root")
        }
        return resolved
    }

    /// `path` with every symbolic link resolved, or `nil` when it does not exist.
    private static func resolved(_ path: String) -> String? {
        guard let pointer = realpath(path, nil) else { return nil }
        defer { free(pointer) }
        return String(cString: pointer)
    }

    /// The bytes of the file `url` names, at most `limit` of them, read on the disk-reading
    /// queue, and its modification time.
    /// - Throws: ``ProxyError`` 403/404 as ``file(for:)``, 404 for a folder, 422 over `limit`.
    func read(_ url: URL, limit: Int64) async throws(ProxyError) -> (Data, Date?) {
        let file = try file(for: url)
        let result: Result<(Data, Date?), ProxyError> = await withHandOffContinuation { continuation in
            ImageWorkQueue.diskReading.enqueue {
                continuation.resume(returning: Self.readFile(file, limit: limit))
            }
        }
        return try result.get()
    }

    private static func readFile(_ file: String, limit: Int64) -> Result<(Data, Date?), ProxyError> {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: file, isDirectory: &isFolder), !isFolder.boolValue else {
            return .failure(ProxyError(.sourceNotFound, "the local source is not a file"))
        }
        guard let handle = FileHandle(forReadingAtPath: file) else {
            return .failure(ProxyError(.sourceNotFound, "the local source cannot be read"))
        }
        defer { try? handle.close() }
        do {
            let data = try handle.read(upToCount: Int(min(limit, Int64(Int.max - 1))) + 1) ?? Data()
            guard data.count <= limit else {
                return .failure(
                    ProxyError(.limitExceeded, "the source is over --max-src-file-size")
                )
            }
            let modified = (try? FileManager.default.attributesOfItem(atPath: file))?[.modificationDate] as? Date
            return .success((data, modified))
        } catch {
            return .failure(ProxyError(.sourceNotFound, "the local source cannot be read"))
        }
    }
}
