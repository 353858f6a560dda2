import Foundation
@_spi(WebImageInternals) import WebImageCoders

/// The disk tier of ``HTTPResponseCache``: one file per URL in its folder, written whole to a
/// temporary file and renamed into place, the oldest (by last use) removed past the capacity.
///
/// Every file operation runs on one serial queue of its own, never on the caller's thread or
/// the Swift cooperative pool; reads wait for the writes queued before them.
final class ResponseDiskStore: Sendable {
    let directory: URL
    let capacity: Int
    private let queue = DispatchQueue(label: "swift-web-image.response-cache.disk")

    /// What a file holds besides the body.
    private struct Record: Codable {
        var key: String
        var url: String
        var status: Int
        var httpVersion: String
        var headers: [[String]]
        var storedDate: Date
        var varyingHeaders: [String: String]
    }

    private static let magic = Data("WIRC1\n".utf8)

    init(directory: URL, capacity: Int) {
        self.directory = directory
        self.capacity = capacity
    }

    /// The stored response for `key`, if its file is whole and for that key.
    func read(_ key: String) async -> HTTPCachedResponse? {
        let file = file(for: key)
        return await withHandOffContinuation { continuation in
            queue.async {
                let cached = Self.decode(try? Data(contentsOf: file), key: key)
                // Its use counts for eviction: the file's date is its last use.
                if cached != nil {
                    try? FileManager.default.setAttributes([.modificationDate: Date()], ofItemAtPath: file.path)
                }
                continuation.resume(returning: cached)
            }
        }
    }

    /// Queues the write of `cached` for `key`; too large a response (over a twentieth of the
    /// capacity) removes the stored one instead.
    func write(_ cached: HTTPCachedResponse, key: String) {
        let (file, directory, capacity) = (file(for: key), directory, capacity)
        guard let encoded = Self.encode(cached, key: key), encoded.count <= capacity / 20 else {
            return remove(key)
        }
        queue.async {
            let temporary = directory.appendingPathComponent(".\(UUID().uuidString).tmp")
            do {
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                try encoded.write(to: temporary)
                // rename(2) replaces the old file in one step: a reader sees one or the other.
                guard rename(temporary.path, file.path) == 0 else { throw POSIXError(.EIO) }
            } catch {
                try? FileManager.default.removeItem(at: temporary)  // the cache is best effort
            }
            Self.trim(directory, to: capacity)
        }
    }

    func remove(_ key: String) {
        let file = file(for: key)
        queue.async { try? FileManager.default.removeItem(at: file) }
    }

    func removeAll() {
        let directory = directory
        queue.async {
            for file in Self.files(in: directory) { try? FileManager.default.removeItem(at: file.url) }
        }
    }

    /// Bytes on disk now, once the queued writes are done.
    func size() async -> Int {
        let directory = directory
        return await withHandOffContinuation { continuation in
            queue.async { continuation.resume(returning: Self.files(in: directory).reduce(0) { $0 + $1.size }) }
        }
    }

    /// The file for `key`: a 64-bit FNV-1a hash of it (the key is checked on read).
    private func file(for key: String) -> URL {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in key.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        return directory.appendingPathComponent(String(hash, radix: 16) + ".response")
    }

    private static func encode(_ cached: HTTPCachedResponse, key: String) -> Data? {
        let record = Record(
            key: key,
            url: cached.response.url.absoluteString,
            status: cached.response.statusCode,
            httpVersion: cached.response.httpVersion,
            headers: cached.response.headers.map { [$0.name.rawName, $0.value] },
            storedDate: cached.storedDate,
            varyingHeaders: cached.varyingHeaders
        )
        guard let head = try? JSONEncoder().encode(record) else { return nil }
        var data = magic
        var length = UInt32(head.count).bigEndian
        withUnsafeBytes(of: &length) { data.append(contentsOf: $0) }
        data.append(head)
        data.append(cached.data)
        return data
    }

    private static func decode(_ data: Data?, key: String) -> HTTPCachedResponse? {
        guard let data, data.count >= magic.count + 4, data.prefix(magic.count) == magic else { return nil }
        let lengthStart = data.startIndex + magic.count
        let length = data[lengthStart..<lengthStart + 4].reduce(0) { $0 << 8 | Int($1) }
        let headStart = lengthStart + 4
        guard data.endIndex - headStart >= length,
            let record = try? JSONDecoder().decode(Record.self, from: data[headStart..<headStart + length]),
            record.key == key, let url = URL(string: record.url)
        else { return nil }
        var headers = HTTPFields()
        for pair in record.headers where pair.count == 2 {
            if let name = HTTPField.Name(pair[0]) { headers.append(HTTPField(name: name, value: pair[1])) }
        }
        return HTTPCachedResponse(
            response: .init(url: url, statusCode: record.status, headers: headers, httpVersion: record.httpVersion),
            data: Data(data[(headStart + length)...]),
            storedDate: record.storedDate,
            varyingHeaders: record.varyingHeaders
        )
    }

    private static func files(in directory: URL) -> [(url: URL, size: Int, used: Date)] {
        let keys: [URLResourceKey] = [.fileSizeKey, .contentModificationDateKey]
        let urls = (try? FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: keys)) ?? []
        return urls.filter { $0.pathExtension == "response" }.compactMap { url in
            guard let values = try? url.resourceValues(forKeys: Set(keys)) else { return nil }
            return (url, values.fileSize ?? 0, values.contentModificationDate ?? .distantPast)
        }
    }

    /// Removes the least recently used files until the folder holds at most `capacity` bytes.
    private static func trim(_ directory: URL, to capacity: Int) {
        var files = files(in: directory)
        var total = files.reduce(0) { $0 + $1.size }
        guard total > capacity else { return }
        files.sort { $0.used < $1.used }
        for file in files where total > capacity {
            try? FileManager.default.removeItem(at: file.url)
            total -= file.size
        }
    }
}
