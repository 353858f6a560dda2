import Foundation
import Testing
import WebImageHTTP
import WebImageTestSupport

@Suite("Reachability", .timeLimit(.minutes(1)))
struct ReachabilityMonitorTests {
    /// Whether this machine's kernel has an IPv4 or IPv6 default route, read independently.
    static var hasDefaultRoute: Bool {
        let ipv4 =
            (try? String(contentsOfFile: "/proc/net/route", encoding: .utf8))?.split(separator: "\n").dropFirst()
            .contains { line in
                let fields = line.split(whereSeparator: { $0 == "\t" || $0 == " " })
                return fields.count > 7 && fields[1] == "00000000" && fields[7] == "00000000"
            } ?? false
        let ipv6 =
            (try? String(contentsOfFile: "/proc/net/ipv6_route", encoding: .utf8))?.split(separator: "\n")
            .contains { $0.hasPrefix(String(repeating: "0", count: 32) + " 00 ") && !$0.hasSuffix(" lo") } ?? false
        return ipv4 || ipv6
    }

    @Test("The status follows the kernel's default route")
    func defaultRoute() {
        let monitor = ReachabilityMonitor()
        #expect(monitor.status == .unknown)
        let status = monitor.refresh()
        #expect(status.isReachable == Self.hasDefaultRoute, "\(status)")
        if case .reachable(let interface) = status { #expect(interface.kind != .loopback && !interface.name.isEmpty) }
    }

    @Test("Loopback hosts are reachable via the loopback interface")
    func loopback() {
        for host in ["127.0.0.1", "localhost", "::1"] {
            #expect(ReachabilityMonitor(host: host).refresh() == .reachable(via: .init(name: "lo", kind: .loopback)))
        }
    }

    @Test("Monitoring announces the first status to the handler and the stream, then stops")
    func monitoring() async {
        let monitor = ReachabilityMonitor(host: "127.0.0.1", interval: .milliseconds(50))
        let calls = Locked(0)
        monitor.setStatusChangeHandler { _ in calls.withLock { $0 += 1 } }
        let updates = monitor.statusUpdates
        monitor.startMonitoring()
        var first: ReachabilityMonitor.Status?
        for await status in updates {
            first = status
            break
        }
        #expect(first?.isReachable == true)
        try? await Task.sleep(for: .milliseconds(200))
        monitor.stopMonitoring()
        #expect(calls.withLock { $0 } == 1, "an unchanged status is announced once")
    }
}

@Suite("Reachability changes", .timeLimit(.minutes(1)))
struct ReachabilityChangeTests {
    /// A routing table and interface folder of the test's own, written as the kernel lays them out.
    struct Network {
        let folder: TemporaryDirectory
        var sources: RouteSources {
            var sources = RouteSources()
            sources.ipv4Routes = folder.url.appendingPathComponent("route").path
            sources.ipv6Routes = folder.url.appendingPathComponent("ipv6_route").path
            sources.interfaces = folder.url.appendingPathComponent("net").path
            return sources
        }

        init() throws {
            folder = try TemporaryDirectory()
            try Data().write(to: folder.url.appendingPathComponent("ipv6_route"))
            for (name, type, wireless) in [("eth0", "1", false), ("wlan0", "1", true)] {
                let base = folder.url.appendingPathComponent("net/\(name)")
                try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
                try Data("\(type)\n".utf8).write(to: base.appendingPathComponent("type"))
                if wireless {
                    try FileManager.default.createDirectory(
                        at: base.appendingPathComponent("wireless"),
                        withIntermediateDirectories: true
                    )
                }
            }
        }

        /// Replaces the IPv4 table (atomically, as the kernel's file never reads half-written):
        /// a default route out of `interface`, or none, beside a local 10.0.0.0/8 route.
        func setDefaultRoute(_ interface: String?) throws {
            var lines = ["Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT"]
            lines.append("eth0\t0000000A\t00000000\t0001\t0\t0\t0\t000000FF\t0\t0\t0")
            if let interface { lines.append("\(interface)\t00000000\t0100000A\t0003\t0\t0\t100\t00000000\t0\t0\t0") }
            try Data((lines.joined(separator: "\n") + "\n").utf8)
                .write(to: folder.url.appendingPathComponent("route"), options: .atomic)
        }
    }

    @Test("A lost and a changed default route are announced once each, to the handler and the stream, in order")
    func changes() async throws {
        let network = try Network()
        defer { network.folder.remove() }
        try network.setDefaultRoute("eth0")
        let monitor = ReachabilityMonitor(host: nil, interval: .milliseconds(20), sources: network.sources)
        let heard = Locked<[ReachabilityMonitor.Status]>([])
        monitor.setStatusChangeHandler { status in heard.withLock { $0.append(status) } }
        var updates = monitor.statusUpdates.makeAsyncIterator()
        monitor.startMonitoring()
        defer { monitor.stopMonitoring() }
        let ethernet = ReachabilityMonitor.Status.reachable(via: .init(name: "eth0", kind: .ethernet))
        let wifi = ReachabilityMonitor.Status.reachable(via: .init(name: "wlan0", kind: .wifi))
        #expect(await updates.next() == ethernet)
        try network.setDefaultRoute(nil)
        #expect(await updates.next() == .notReachable)
        #expect(monitor.status == .notReachable)
        try network.setDefaultRoute("wlan0")
        #expect(await updates.next() == wifi)
        #expect(heard.value == [ethernet, .notReachable, wifi])
        // A host on the local route stays reachable through eth0 whatever the default route.
        try network.setDefaultRoute(nil)
        let local = ReachabilityMonitor(host: "10.1.2.3", interval: .seconds(60), sources: network.sources)
        #expect(local.refresh() == ethernet)
        let elsewhere = ReachabilityMonitor(host: "192.0.2.1", interval: .seconds(60), sources: network.sources)
        #expect(elsewhere.refresh() == .notReachable)
    }
}
