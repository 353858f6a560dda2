/// Checksums the test builders need.
public enum Checksum {
    /// CRC-32 (ISO 3309, polynomial 0xEDB88320), as PNG chunks and gzip trailers use.
    public static func crc32(_ bytes: some Sequence<UInt8>) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = (crc >> 8) ^ table[Int((crc ^ UInt32(byte)) & 0xFF)] }
        return crc ^ 0xFFFF_FFFF
    }

    /// The CRC-32 of `count` zero bytes in O(log count) steps: feeding a zero byte is linear
    /// over GF(2), so its `count`-th power is found by squaring (as zlib's `crc32_combine` does).
    /// Builders of decompression bombs use it instead of feeding gigabytes through ``crc32(_:)``.
    public static func crc32OfZeros(count: Int) -> UInt32 {
        precondition(count >= 0)
        // Column i: the register after one zero byte, starting from the register 1 << i.
        var power = (0..<32).map { step(UInt32(1) << $0) }
        var register: UInt32 = 0xFFFF_FFFF
        var remaining = count
        while remaining > 0 {
            if remaining & 1 == 1 { register = apply(power, to: register) }
            power = power.map { apply(power, to: $0) }
            remaining >>= 1
        }
        return register ^ 0xFFFF_FFFF
    }

    private static let table: [UInt32] = (0..<256).map { index in
        var crc = UInt32(index)
        for _ in 0..<8 { crc = crc & 1 != 0 ? 0xEDB8_8320 ^ (crc >> 1) : crc >> 1 }
        return crc
    }

    private static func step(_ register: UInt32) -> UInt32 { (register >> 8) ^ table[Int(register & 0xFF)] }

    /// The linear map with these columns applied to `vector`.
    private static func apply(_ columns: [UInt32], to vector: UInt32) -> UInt32 {
        var result: UInt32 = 0
        for bit in 0..<32 where vector & (1 << bit) != 0 { result ^= columns[bit] }
        return result
    }
}
