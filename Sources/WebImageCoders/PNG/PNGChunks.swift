import Foundation

enum PNGSignature {
    static let bytes: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
}

/// One chunk of a PNG stream: its four-letter type and where its payload lies in the data.
struct PNGChunk {
    var type: String
    var payload: Range<Int>
}

/// Splits PNG data into chunks (no CRC checks: libpng does those when it decodes).
enum PNGChunkReader {
    /// The chunks after the signature, up to IEND or the end of complete chunks.
    static func chunks(in bytes: UnsafeRawBufferPointer) -> [PNGChunk] {
        var chunks: [PNGChunk] = []
        var offset = PNGSignature.bytes.count
        while offset + 12 <= bytes.count {
            let length = Int(bigEndianUInt32(bytes, at: offset))
            guard length <= Int(Int32.max), offset + 12 + length <= bytes.count else { break }
            let type = String(decoding: bytes[offset + 4..<offset + 8], as: UTF8.self)
            chunks.append(PNGChunk(type: type, payload: offset + 8..<offset + 8 + length))
            offset += 12 + length
            if type == "IEND" { break }
        }
        return chunks
    }

    static func bigEndianUInt32(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt32 {
        UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8
            | UInt32(bytes[offset + 3])
    }

    static func bigEndianUInt16(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt16 {
        UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
    }
}

/// Builds a standalone PNG stream chunk by chunk (used to decode APNG frames with libpng).
struct PNGStreamWriter {
    private(set) var data = Data(PNGSignature.bytes)

    mutating func append(type: String, payload: UnsafeRawBufferPointer) {
        var length = UInt32(payload.count).bigEndian
        withUnsafeBytes(of: &length) { data.append(contentsOf: $0) }
        let typeBytes = Array(type.utf8)
        data.append(contentsOf: typeBytes)
        data.append(contentsOf: payload)
        var crc = CRC32()
        crc.update(typeBytes)
        crc.update(payload)
        var checksum = crc.value.bigEndian
        withUnsafeBytes(of: &checksum) { data.append(contentsOf: $0) }
    }

    mutating func append(type: String, payload: [UInt8]) {
        payload.withUnsafeBytes { append(type: type, payload: $0) }
    }
}

/// The CRC-32 of PNG chunks (ISO 3309, polynomial 0xEDB88320).
struct CRC32 {
    private static let table: [UInt32] = (0..<256).map { index in
        var value = UInt32(index)
        for _ in 0..<8 { value = value & 1 != 0 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1 }
        return value
    }

    private var state: UInt32 = 0xFFFF_FFFF

    mutating func update(_ bytes: some Sequence<UInt8>) {
        for byte in bytes { state = Self.table[Int((state ^ UInt32(byte)) & 0xFF)] ^ (state >> 8) }
    }

    var value: UInt32 { state ^ 0xFFFF_FFFF }
}
