import Foundation

/// Deterministic entry bytes for disk-cache crash and multi-process tests: anyone holding a key
/// can tell whether an entry's bytes are whole.
public enum CacheStressPayload {
    /// The key of entry `index`.
    public static func key(_ index: Int) -> String { "https://stress.example/entry/\(index).bin?v=1" }

    /// 4 KB to ~1 MB of bytes that depend on every character of `key`.
    public static func bytes(forKey key: String) -> Data {
        var seed: UInt64 = 1_469_598_103_934_665_603
        for byte in key.utf8 { seed = (seed ^ UInt64(byte)) &* 1_099_511_628_211 }
        let count = 4096 + Int(seed % (1 << 20))
        var bytes = [UInt8](repeating: 0, count: count)
        var state = seed | 1
        for index in 0..<count {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            bytes[index] = UInt8(truncatingIfNeeded: state)
        }
        return Data(bytes)
    }
}
