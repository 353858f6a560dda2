import Foundation

/// A black 8-bit grayscale PNG of any size in a few bytes per 258 pixels (``Deflate/zeros(count:)``):
/// "small file, huge image" inputs (1 × 100,000,000 is about 1.3 MB).
public enum BlankPNG {
    public static func make(width: Int, height: Int) -> Data {
        precondition(width > 0 && height > 0)
        let rawCount = height * (width + 1)  // a filter byte (0) before each row
        // Adler-32 of zeros: a stays 1, b grows by 1 per byte.
        let adler = UInt32(rawCount % 65521) << 16 | 1
        let zlib = [0x78, 0x01] + Deflate.zeros(count: rawCount) + be32(adler)

        var ihdr = be32(UInt32(width)) + be32(UInt32(height))
        ihdr += [8, 0, 0, 0, 0]  // 8-bit gray, deflate, adaptive filters, not interlaced
        let png = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + chunk("IHDR", ihdr) + chunk("IDAT", zlib)
        return Data(png + chunk("IEND", []))
    }

    private static func chunk(_ type: String, _ payload: [UInt8]) -> [UInt8] {
        let typeBytes = Array(type.utf8)
        return be32(UInt32(payload.count)) + typeBytes + payload + be32(Checksum.crc32(typeBytes + payload))
    }

    private static func be32(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
    }
}

/// Deflate streams made without a compression library.
public enum Deflate {
    /// `count` zero bytes as one fixed-Huffman block: a zero literal, then back-references of
    /// length 258 at distance 1 (13 bits per 258 bytes, a ratio of about 160:1).
    public static func zeros(count: Int) -> [UInt8] {
        var bits = BitWriter()
        bits.write(1, count: 1)  // BFINAL
        bits.write(1, count: 2)  // BTYPE 01: fixed Huffman codes
        var remaining = count
        if remaining > 0 {
            bits.writeHuffman(0b0011_0000, count: 8)  // literal 0
            remaining -= 1
        }
        while remaining >= 258 {
            bits.writeHuffman(0b1100_0101, count: 8)  // length code 285: 258 bytes
            bits.writeHuffman(0, count: 5)  // distance code 0: 1 byte back
            remaining -= 258
        }
        for _ in 0..<remaining { bits.writeHuffman(0b0011_0000, count: 8) }
        bits.writeHuffman(0, count: 7)  // end of block (256)
        return bits.flushedBytes
    }

    /// Deflate's bit order: values least significant bit first, Huffman codes most significant first.
    private struct BitWriter {
        var bytes: [UInt8] = []
        private var buffer: UInt64 = 0
        private var buffered = 0

        mutating func write(_ value: UInt32, count: Int) {
            buffer |= UInt64(value) << UInt64(buffered)
            buffered += count
            while buffered >= 8 {
                bytes.append(UInt8(buffer & 0xFF))
                buffer >>= 8
                buffered -= 8
            }
        }

        mutating func writeHuffman(_ code: UInt32, count: Int) {
            var reversed: UInt32 = 0
            for bit in 0..<count where code & (1 << UInt32(bit)) != 0 { reversed |= 1 << UInt32(count - 1 - bit) }
            write(reversed, count: count)
        }

        var flushedBytes: [UInt8] { buffered > 0 ? bytes + [UInt8(buffer & 0xFF)] : bytes }
    }
}
