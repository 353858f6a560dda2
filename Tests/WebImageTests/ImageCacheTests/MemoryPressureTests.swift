import Foundation
import Testing
import WebImage
import WebImageTestSupport

/// cgroup files written into a temporary folder, read as the kernel's would be.
@Suite("Memory limits from the cgroup, and purges under pressure")
final class MemoryPressureTests {
    /// One folder per test (Swift Testing makes a suite instance for each), removed on every path.
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory(prefix: "webimage-cgroup")
    }

    deinit { directory.remove() }

    /// A monitor of the cgroup files in the temporary folder, checking every 10 ms.
    func monitor() -> MemoryPressureMonitor {
        MemoryPressureMonitor(memory: SystemMemory(cgroupDirectory: directory.url), interval: .milliseconds(10))
    }

    /// A cache holding 4,000 bytes (ten images) that purges to 2,400.
    func fullCache() -> MemoryCache {
        let cache = MemoryCache(limits: .init(costLimit: 4000, costAfterPurge: 2400))
        for index in 0..<10 { cache.setImage(costImage(100), forKey: "k\(index)") }
        return cache
    }

    func write(_ text: String, _ name: String, in folder: URL? = nil) throws {
        let folder = folder ?? directory.url
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data(text.utf8).write(to: folder.appendingPathComponent(name))
    }

    @Test("cgroup v2 and v1 limits are read; 'max' and v1's huge value mean none")
    func limits() throws {
        let memory = SystemMemory(cgroupDirectory: directory.url)
        #expect(memory.cgroupLimit == nil)
        #expect(memory.limit == ProcessInfo.processInfo.physicalMemory)

        try write("536870912\n", "memory.max")
        try write("268435456\n", "memory.current")
        #expect(memory.cgroupLimit == 512 << 20)
        #expect(memory.limit == min(ProcessInfo.processInfo.physicalMemory, 512 << 20))
        #expect(memory.cgroupUsageFraction == 0.5)

        try write("max\n", "memory.max")
        #expect(memory.cgroupLimit == nil && memory.cgroupUsageFraction == nil)

        let v1 = directory.url.appendingPathComponent("v1")
        try write("9223372036854771712\n", "memory.limit_in_bytes", in: v1)
        #expect(SystemMemory(cgroupDirectory: v1).cgroupLimit == nil)
        try write("1073741824\n", "memory.limit_in_bytes", in: v1)
        try write("1073741824\n", "memory.usage_in_bytes", in: v1)
        #expect(SystemMemory(cgroupDirectory: v1).cgroupLimit == 1 << 30)
        #expect(SystemMemory(cgroupDirectory: v1).cgroupUsageFraction == 1)
    }

    @Test("The process's cgroup folder comes from /proc/self/cgroup (v2 unified, v1 memory controller)")
    func processCgroup() throws {
        let mount = directory.url.appendingPathComponent("fs")
        let service = mount.appendingPathComponent("system.slice/image.service")
        try write("max\n", "memory.max", in: service)
        try write("0::/system.slice/image.service\n", "v2")
        #expect(
            SystemMemory.processCgroupDirectory(procSelfCgroup: directory.file("v2"), mountPoint: mount).path
                == service.path
        )

        let controller = mount.appendingPathComponent("memory/docker/abc")
        try write("1073741824\n", "memory.limit_in_bytes", in: controller)
        try write("5:cpu:/docker/abc\n4:memory:/docker/abc\n0::/\n", "v1")
        #expect(
            SystemMemory.processCgroupDirectory(procSelfCgroup: directory.file("v1"), mountPoint: mount).path
                == controller.path
        )

        // A path the namespace hides (the host's name for it) falls back to the mount point.
        try write("0::/elsewhere\n", "hidden")
        #expect(
            SystemMemory.processCgroupDirectory(procSelfCgroup: directory.file("hidden"), mountPoint: mount).path
                == mount.path
        )
    }

    @Test("Over the threshold, watched caches purge to their watermark; under it, nothing is purged")
    func purgesUnderPressure() async throws {
        try write("1000000\n", "memory.max")
        try write("500000\n", "memory.current")
        let monitor = monitor()
        defer { monitor.stop() }
        #expect(monitor.threshold == 0.9)
        let cache = fullCache()
        monitor.watch(cache)
        #expect(monitor.isPolling)

        try await Task.sleep(for: .milliseconds(200))
        #expect(monitor.purgeCount == 0)
        #expect(cache.totalCost == 4000)

        try write("950000\n", "memory.current")
        let deadline = ContinuousClock.now + .seconds(10)
        while monitor.purgeCount == 0, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(monitor.purgeCount > 0)
        #expect(cache.totalCost == 2400)
        #expect(cache.keysByRecency.first == "k9")
        monitor.stop()
        #expect(!monitor.isPolling)
    }

    @Test("Without a cgroup limit nothing is polled; stopping ends the polling")
    func noLimitNoPolling() async throws {
        try write("max\n", "memory.max")
        try write("999999999\n", "memory.current")
        let monitor = monitor()
        defer { monitor.stop() }
        let cache = fullCache()
        monitor.watch(cache)
        #expect(!monitor.isPolling)
        try await Task.sleep(for: .milliseconds(100))
        #expect(monitor.purgeCount == 0 && cache.totalCost == 4000)
    }
}

@Suite("The allocator tuning for image decoding")
struct AllocatorTuningTests {
    @Test("glibc takes the thresholds; an mmap threshold over glibc's 32 MiB cap is clamped, not refused")
    func tuning() {
        #expect(SystemMemory.tuneAllocatorForImageDecoding())
        #expect(SystemMemory.tuneAllocatorForImageDecoding(trimThreshold: 1 << 40, mmapThreshold: 1 << 30))
        // A bitmap-sized block still allocates and frees normally afterwards.
        let pixels = [UInt8](repeating: 7, count: 1_228_800)
        #expect(pixels.count == 1_228_800 && pixels[1_228_799] == 7)
    }
}
