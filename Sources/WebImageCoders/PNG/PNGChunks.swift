import Foundation

enum PNGSignature {
    static let bytes: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
}

/// One chunk of a PNG stream: its four-letter type and where its payload lies in the data.
struct PNGChunk {
    var type: String
    var payload: Range<Int>
}

/// Big-endian fields of PNG chunks.
enum PNGChunkReader {
    static func bigEndianUInt32(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt32 {
        UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8
            | UInt32(bytes[offset + 3])
    }

    static func bigEndianUInt16(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt16 {
        UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
    }
}

/// The chunks of a PNG stream after the signature, read lazily (no CRC checks: libpng does those
/// when it decodes). Ends at IEND, at the end of complete chunks, or at the first chunk whose type
/// is not four ASCII letters (the stream is corrupt from there; libpng says how). A caller that
/// needs only the chunks before the image data stops there, however large the file.
struct PNGChunkSequence: Sequence, IteratorProtocol {
    let bytes: UnsafeRawBufferPointer
    private var offset = PNGSignature.bytes.count
    private var ended = false

    init(bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    /// Chunk types are four ASCII letters (PNG §5.4).
    static func isTypeLetter(_ byte: UInt8) -> Bool {
        (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
    }

    mutating func next() -> PNGChunk? {
        guard !ended, offset + 12 <= bytes.count else { return nil }
        let length = Int(PNGChunkReader.bigEndianUInt32(bytes, at: offset))
        let typeBytes = bytes[offset + 4..<offset + 8]
        guard length <= Int(Int32.max), offset + 12 + length <= bytes.count,
            typeBytes.allSatisfy(Self.isTypeLetter)
        else {
            ended = true
            return nil
        }
        let chunk = PNGChunk(
            type: String(decoding: typeBytes, as: UTF8.self),
            payload: offset + 8..<offset + 8 + length
        )
        offset += 12 + length
        if chunk.type == "IEND" { ended = true }
        return chunk
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
