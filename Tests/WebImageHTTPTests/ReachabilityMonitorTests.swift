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
