import Foundation

/// What `/proc/self` says about this process (Linux; elsewhere the figures read as zero).
enum ProcessStats {
    /// The targets of the open file descriptors (`socket:[…]`, `/path/file`, `anon_inode:…`).
    static func openDescriptors() -> [String] {
        let folder = "/proc/self/fd"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return names.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "\(folder)/\($0)") }
    }

    /// A `kB` field of `/proc/self/status` in bytes: `VmRSS` now, `VmHWM` the peak.
    static func statusBytes(_ field: String) -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix(field + ":") {
            let number = line.dropFirst(field.count + 1).split(whereSeparator: { $0 == " " || $0 == "\t" }).first
            return (number.flatMap { Int($0) } ?? 0) * 1024
        }
        return 0
    }
}

/// A small seeded generator (SplitMix64), so a seed replays the same run.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }
}
