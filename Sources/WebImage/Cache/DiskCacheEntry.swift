import CWebImageSystem
import Foundation
import WebImageHTTP

/// What the disk cache keeps beside an image's bytes.
public struct DiskCacheMetadata: Sendable, Hashable {
    /// The MIME type the server sent (`image/png`).
    public var contentType: String?
    /// The response's `ETag`, for conditional requests (`refreshCached`).
    public var etag: String?
    /// The response's `Last-Modified`, for conditional requests.
    public var lastModified: String?
    /// Any bytes the caller wants kept with the entry (SDWebImage 5's `sd_extendedObject`).
    public var extendedData: Data?
    /// The caching headers of the HTTP response the entry came from; `nil` for entries stored
    /// by hand or before they were kept, which stay usable until the cache's `maxAge`.
    public var httpCaching: HTTPCachingHeaders?

    /// Metadata; every part is optional.
    public init(
        contentType: String? = nil,
        etag: String? = nil,
        lastModified: String? = nil,
        extendedData: Data? = nil,
        httpCaching: HTTPCachingHeaders? = nil
    ) {
        self.contentType = contentType
        self.etag = etag
        self.lastModified = lastModified
        self.extendedData = extendedData
        self.httpCaching = httpCaching
    }

    /// How long the entry may be used without asking its origin; `nil` when it did not come
    /// from HTTP.
    public var freshness: HTTPFreshness? {
        httpCaching.map { HTTPFreshness(headers: $0, lastModified: lastModified) }
    }

    /// This metadata as a `304` with `notModified` refreshes it: its validators and caching
    /// headers replace the stored ones where it sends them (RFC 9111 §4.3.4).
    public func updated(by notModified: DiskCacheMetadata) -> DiskCacheMetadata {
        var updated = self
        updated.etag = notModified.etag ?? etag
        updated.lastModified = notModified.lastModified ?? lastModified
        if let headers = notModified.httpCaching {
            updated.httpCaching = httpCaching?.updated(by: headers) ?? headers
        }
        return updated
    }
}

/// One entry of a ``DiskCache``, as read from its file.
public struct DiskCacheEntry: Sendable, Hashable {
    /// The key it was stored under.
    public var key: String
    /// Content type, validators and extended data.
    public var metadata: DiskCacheMetadata
    /// When it was written.
    public var storedDate: Date
    /// The image bytes' length (the file is slightly larger).
    public var dataSize: Int
    /// The entry's file.
    public var fileURL: URL
}

/// The entry file format: the image bytes as they were given, then a trailer, so a reader of
/// the image data never copies it and the file still opens as an image elsewhere.
///
///     data | payload | UInt32 payload length (LE) | "WICACHE1"
///     payload = UInt8 version (3) | Float64 stored date (LE bits) | UInt64 XXH64 of data (LE)
///               | field key | field contentType | field etag | field lastModified | field extended
///               | Float64 received date (NaN: not from HTTP) | field cacheControl | field expires
///               | field date | field age | field vary
///     field   = UInt32 length (LE; 0xFFFF_FFFF when absent) | bytes
///
/// Every length is checked against the bytes present: a damaged or foreign file reads as
/// `nil`, never out of bounds. Readers compare the stored key with the one asked for and the
/// checksum with the data, so a flipped byte or an entry copied over another key's is a miss.
/// Version 2 entries (without the HTTP part) still read, as entries without caching headers;
/// version 1 entries (no checksum) read as damaged.
package enum DiskCacheEntryFormat {
    static let magic: [UInt8] = Array("WICACHE1".utf8)
    static let version: UInt8 = 3
    /// The oldest version still read: the same up to the extended data.
    static let oldestReadVersion: UInt8 = 2
    /// Length field plus magic.
    static let footerSize = 4 + 8
    static let absent: UInt32 = .max

    /// The checksum stored with an entry's data: XXH64, seed 0.
    package static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        wi_checksum64(bytes.baseAddress, bytes.count, 0)
    }

    static func trailer(key: String, metadata: DiskCacheMetadata, storedDate: Date, checksum: UInt64) -> [UInt8] {
        var payload: [UInt8] = [version]
        append(storedDate.timeIntervalSince1970.bitPattern, to: &payload)
        append(checksum, to: &payload)
        func utf8(_ text: String?) -> Data? { text.map { Data($0.utf8) } }
        let caching = metadata.httpCaching
        let fields: [Data?] = [
            Data(key.utf8), utf8(metadata.contentType), utf8(metadata.etag), utf8(metadata.lastModified),
            metadata.extendedData,
        ]
        let httpFields = [caching?.cacheControl, caching?.expires, caching?.date, caching?.age, caching?.vary]
        for field in fields { appendField(field, to: &payload) }
        append((caching?.receivedDate.timeIntervalSince1970 ?? .nan).bitPattern, to: &payload)
        for field in httpFields { appendField(utf8(field), to: &payload) }
        var trailer = payload
        append(UInt32(payload.count), to: &trailer)
        trailer.append(contentsOf: magic)
        return trailer
    }

    /// The image bytes' length in a file of `fileBytes` ending with `footer` (its last 12 bytes);
    /// `nil` when the footer is not ours or does not fit.
    static func dataLength(fileSize: Int, footer: UnsafeRawBufferPointer) -> (data: Int, payload: Int)? {
        guard fileSize >= footerSize, footer.count == footerSize, footer[4...].elementsEqual(magic) else { return nil }
        let payloadLength = Int(readUInt32(footer, at: 0))
        guard payloadLength <= fileSize - footerSize else { return nil }
        return (fileSize - footerSize - payloadLength, payloadLength)
    }

    /// Decodes a payload; `nil` when it is damaged.
    static func decode(payload: UnsafeRawBufferPointer) -> DecodedPayload? {
        guard payload.count >= 17, (oldestReadVersion...version).contains(payload[0]) else { return nil }
        var offset = 1
        let stored = Date(timeIntervalSince1970: Double(bitPattern: readUInt64(payload, at: offset)))
        offset += 8
        let checksum = readUInt64(payload, at: offset)
        offset += 8
        guard let fields = readFields(5, from: payload, at: &offset, as: { Data($0) }), let keyData = fields[0],
            let key = String(data: keyData, encoding: .utf8)
        else { return nil }
        func text(_ data: Data?) -> String? { data.flatMap { String(data: $0, encoding: .utf8) } }
        var metadata = DiskCacheMetadata(
            contentType: text(fields[1]),
            etag: text(fields[2]),
            lastModified: text(fields[3]),
            extendedData: fields[4]
        )
        if payload[0] >= 3 {
            guard offset + 8 <= payload.count else { return nil }
            let received = Double(bitPattern: readUInt64(payload, at: offset))
            offset += 8
            guard let http = readFields(5, from: payload, at: &offset, as: { String(decoding: $0, as: UTF8.self) })
            else { return nil }
            if !received.isNaN {
                metadata.httpCaching = HTTPCachingHeaders(
                    cacheControl: http[0],
                    expires: http[1],
                    date: http[2],
                    age: http[3],
                    vary: http[4],
                    receivedDate: Date(timeIntervalSince1970: received)
                )
            }
        }
        guard offset == payload.count else { return nil }
        return DecodedPayload(key: key, metadata: metadata, stored: stored, checksum: checksum)
    }

    /// `count` length-prefixed fields from `offset` on, each made by `make` from its bytes,
    /// moving `offset` past them; `nil` when one does not fit.
    private static func readFields<Field>(
        _ count: Int,
        from payload: UnsafeRawBufferPointer,
        at offset: inout Int,
        as make: (UnsafeRawBufferPointer) -> Field
    ) -> [Field?]? {
        var fields: [Field?] = []
        fields.reserveCapacity(count)
        for _ in 0..<count {
            guard offset + 4 <= payload.count else { return nil }
            let length = readUInt32(payload, at: offset)
            offset += 4
            if length == absent {
                fields.append(nil)
                continue
            }
            guard Int(length) <= payload.count - offset else { return nil }
            fields.append(make(UnsafeRawBufferPointer(rebasing: payload[offset..<offset + Int(length)])))
            offset += Int(length)
        }
        return fields
    }

    private static func appendField(_ field: Data?, to payload: inout [UInt8]) {
        if let field {
            append(UInt32(field.count), to: &payload)
            payload.append(contentsOf: field)
        } else {
            append(absent, to: &payload)
        }
    }

    /// A trailer's contents.
    struct DecodedPayload {
        var key: String
        var metadata: DiskCacheMetadata
        var stored: Date
        var checksum: UInt64
    }

    private static func append<T: FixedWidthInteger>(_ value: T, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    private static func readUInt32(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt32 {
        var value: UInt32 = 0
        for index in 0..<4 { value |= UInt32(bytes[offset + index]) << (8 * index) }
        return value
    }

    private static func readUInt64(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt64 {
        var value: UInt64 = 0
        for index in 0..<8 { value |= UInt64(bytes[offset + index]) << (8 * index) }
        return value
    }
}
