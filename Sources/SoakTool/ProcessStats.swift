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
