import Foundation

/// Gzip framing around uncompressed ("stored") deflate blocks: valid gzip that any decoder
/// accepts, made without a compression library.
public enum GZip {
    public static func stored(_ data: Data) -> Data {
        var out: [UInt8] = [0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 255]
        let bytes = [UInt8](data)
        var offset = 0
        repeat {
            let length = min(65535, bytes.count - offset)
            out.append(offset + length == bytes.count ? 1 : 0)
            out += [UInt8(length & 0xFF), UInt8(length >> 8), UInt8(~length & 0xFF), UInt8((~length >> 8) & 0xFF)]
            out += bytes[offset..<offset + length]
            offset += length
        } while offset < bytes.count
        let crc = Checksum.crc32(bytes)
        let size = UInt32(truncatingIfNeeded: bytes.count)
        for value in [crc, size] { out += (0..<4).map { UInt8(truncatingIfNeeded: value >> ($0 * 8)) } }
        return Data(out)
    }

    /// Gzip of `count` zero bytes, compressed about 160:1 (``Deflate/zeros(count:)``): a
    /// decompression bomb for tests.
    public static func zeros(count: Int) -> Data {
        var out: [UInt8] = [0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 255]
        out += Deflate.zeros(count: count)
        let crc = Checksum.crc32OfZeros(count: count)
        let size = UInt32(truncatingIfNeeded: count)
        for value in [crc, size] { out += (0..<4).map { UInt8(truncatingIfNeeded: value >> ($0 * 8)) } }
        return Data(out)
    }
}
