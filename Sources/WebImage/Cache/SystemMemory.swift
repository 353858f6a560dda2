import Foundation

/// How much memory this process may use: the host's RAM, or less when the process runs in a
/// cgroup with a memory limit (a container, a systemd unit with `MemoryMax=`). Default cache
/// sizes derive from ``limit``, so a service in a 512 MiB container does not size its caches
/// from the 64 GiB host.
///
/// Reads cgroup v2 (`memory.max`, `memory.current`) and falls back to cgroup v1
/// (`memory.limit_in_bytes`, `memory.usage_in_bytes`). Values are read when asked; every
/// property is safe from any thread.
public struct SystemMemory: Sendable {
    /// The folder holding the memory cgroup files read (`memory.max` and so on).
    public var cgroupDirectory: URL

    /// Reads the cgroup files in `cgroupDirectory`; by default this process's own memory cgroup
    /// (from `/proc/self/cgroup`: v2's unified folder, or v1's `memory` controller).
    public init(cgroupDirectory: URL = SystemMemory.processCgroupDirectory()) {
        self.cgroupDirectory = cgroupDirectory
    }

    /// This process's memory cgroup folder, or `/sys/fs/cgroup` when it cannot be told (a
    /// container sees its own cgroup at the root).
    public static func processCgroupDirectory(
        procSelfCgroup: URL = URL(fileURLWithPath: "/proc/self/cgroup"),
        mountPoint: URL = URL(fileURLWithPath: "/sys/fs/cgroup")
    ) -> URL {
        let lines = ((try? String(contentsOf: procSelfCgroup, encoding: .utf8)) ?? "").split(separator: "\n")
        // "4:memory:/path" (v1) names the memory controller's folder; "0::/path" is v2's.
        var candidates: [URL] = []
        for line in lines {
            let fields = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard fields.count == 3 else { continue }
            let path = String(fields[2])
            if fields[1].split(separator: ",").contains("memory") {
                let controller = mountPoint.appendingPathComponent("memory")
                candidates += [controller.appendingPathComponent(path), controller]
            } else if fields[0] == "0", fields[1].isEmpty {
                candidates += [mountPoint.appendingPathComponent(path), mountPoint]
            }
        }
        let files = ["memory.max", "memory.limit_in_bytes"]
        return candidates.first { folder in
            files.contains { FileManager.default.fileExists(atPath: folder.appendingPathComponent($0).path) }
        } ?? mountPoint
    }

    /// The host's physical memory, or the cgroup's limit when that is lower.
    public var limit: UInt64 {
        let physical = ProcessInfo.processInfo.physicalMemory
        guard let cgroupLimit else { return physical }
        return min(physical, cgroupLimit)
    }

    /// The cgroup's memory limit in bytes; `nil` when there is none ("max", or no cgroup files).
    public var cgroupLimit: UInt64? {
        // cgroup v1 reports "no limit" as a huge page-rounded number.
        value(of: "memory.max") ?? value(of: "memory.limit_in_bytes").flatMap { $0 < 1 << 60 ? $0 : nil }
    }

    /// The cgroup's current memory use in bytes (page cache included, as the kernel counts it
    /// against the limit); `nil` without cgroup files.
    public var cgroupUsage: UInt64? {
        value(of: "memory.current") ?? value(of: "memory.usage_in_bytes")
    }

    /// The fraction of ``cgroupLimit`` in use, 0–1; `nil` when the cgroup has no limit.
    public var cgroupUsageFraction: Double? {
        guard let limit = cgroupLimit, limit > 0, let usage = cgroupUsage else { return nil }
        return Double(usage) / Double(limit)
    }

    /// The memory this process may use, shared by all callers (the default cgroup folder).
    public static let current = SystemMemory()

    private func value(of name: String) -> UInt64? {
        let url = cgroupDirectory.appendingPathComponent(name)
        // These files are a few bytes; a missing file or "max" means no value.
        guard let data = try? Data(contentsOf: url, options: .uncached).prefix(64) else { return nil }
        return UInt64(String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }
}
