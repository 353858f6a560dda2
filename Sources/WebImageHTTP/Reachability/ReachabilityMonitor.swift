import Foundation
@_spi(WebImageInternals) import WebImageCoders

/// Network reachability on Linux (AFNetworkReachabilityManager): read from the kernel's routing
/// table (`/proc/net/route`, `/proc/net/ipv6_route`) and interface kinds (`/sys/class/net`).
///
/// ```swift
/// let monitor = ReachabilityMonitor()              // the default route; or ReachabilityMonitor(host:)
/// monitor.setStatusChangeHandler { print("network is now \($0)") }
/// monitor.startMonitoring()
/// for await status in monitor.statusUpdates { … }
/// ```
///
/// Monitoring is a light periodic check (`interval`, default 2 s) on a background task; the
/// handler and the stream see each change once. Thread-safe.
public final class ReachabilityMonitor: Sendable {
    /// How the network (or the host) can be reached.
    public enum Status: Sendable, Hashable, CustomStringConvertible {
        /// Not determined yet (monitoring has not run).
        case unknown
        case notReachable
        case reachable(via: Interface)

        public var isReachable: Bool { if case .reachable = self { true } else { false } }

        public var description: String {
            switch self {
            case .unknown: "unknown"
            case .notReachable: "not reachable"
            case .reachable(let interface): "reachable via \(interface.kind.rawValue) (\(interface.name))"
            }
        }
    }

    /// The interface a route goes out of.
    public struct Interface: Sendable, Hashable {
        public enum Kind: String, Sendable, Hashable {
            case ethernet, wifi, cellular, loopback, other
        }

        public var name: String
        public var kind: Kind

        public init(name: String, kind: Kind) {
            self.name = name
            self.kind = kind
        }
    }

    /// A process-wide monitor of the default route.
    public static let shared = ReachabilityMonitor()

    /// The host whose reachability is checked; `nil` checks for a default route.
    public let host: String?
    public let interval: Duration

    private struct State {
        var status: Status = .unknown
        var monitor: Task<Void, Never>?
        var handler: (@Sendable (Status) -> Void)?
        var continuations: [UUID: AsyncStream<Status>.Continuation] = [:]
    }

    private let state = Protected(State())

    /// Where the kernel's routes and interfaces are read from.
    private let sources: RouteSources

    public convenience init(host: String? = nil, interval: Duration = .seconds(2)) {
        self.init(host: host, interval: interval, sources: RouteSources())
    }

    /// A monitor that reads routes and interfaces from `sources` (tests point it at files of
    /// their own to see a change the machine's network never makes).
    package init(host: String?, interval: Duration, sources: RouteSources) {
        self.host = host
        self.interval = interval
        self.sources = sources
    }

    deinit { state.withLock { $0.monitor?.cancel() } }

    /// The last status seen (``Status/unknown`` until checked).
    public var status: Status { state.withLock { $0.status } }

    /// Checks now, records and announces the result if it changed, and returns it.
    @discardableResult
    public func refresh() -> Status {
        let status = RouteTable.current(from: sources).status(for: host)
        let (changed, handler, continuations) = state.withLock { state in
            let changed = state.status != status
            state.status = status
            return (changed, state.handler, Array(state.continuations.values))
        }
        if changed {
            handler?(status)
            for continuation in continuations { continuation.yield(status) }
        }
        return status
    }

    /// Starts checking every `interval`; the first check happens at once.
    public func startMonitoring() {
        let interval = self.interval
        state.withLock { state in
            guard state.monitor == nil else { return }
            state.monitor = Task { [weak self] in
                while !Task.isCancelled {
                    guard let self else { return }
                    self.refresh()
                    try? await Task.sleep(for: interval)
                }
            }
        }
    }

    public func stopMonitoring() {
        state.withLock { state in
            state.monitor?.cancel()
            state.monitor = nil
        }
    }

    /// Called with each new status (AFNetworking's status block).
    public func setStatusChangeHandler(_ handler: (@Sendable (Status) -> Void)?) {
        state.withLock { $0.handler = handler }
    }

    /// Each new status, starting with the current one when known.
    public var statusUpdates: AsyncStream<Status> {
        let (stream, continuation) = AsyncStream.makeStream(of: Status.self)
        let id = UUID()
        let current = state.withLock { state in
            state.continuations[id] = continuation
            return state.status
        }
        if current != .unknown { continuation.yield(current) }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.continuations.removeValue(forKey: id) }
        }
        return stream
    }
}

/// The files the routes and interface kinds are read from: the kernel's by default.
package struct RouteSources: Sendable {
    package var ipv4Routes = "/proc/net/route"
    package var ipv6Routes = "/proc/net/ipv6_route"
    /// A folder with a folder per interface (`type`, `wireless`, `phy80211`).
    package var interfaces = "/sys/class/net"

    package init() {}
}

/// A snapshot of the kernel's IPv4 and IPv6 routes.
struct RouteTable {
    struct Route {
        var interface: String
        var destination: UInt32
        var mask: UInt32
        var isUp: Bool
    }

    var ipv4: [Route] = []
    /// Interfaces with an IPv6 default route.
    var ipv6DefaultInterfaces: [String] = []
    var sources = RouteSources()

    static func current(from sources: RouteSources = RouteSources()) -> RouteTable {
        var table = RouteTable(sources: sources)
        if let text = try? String(contentsOfFile: sources.ipv4Routes, encoding: .utf8) {
            for line in text.split(separator: "\n").dropFirst() {
                let fields = line.split(whereSeparator: { $0 == "\t" || $0 == " " })
                guard fields.count >= 8, let destination = UInt32(fields[1], radix: 16),
                    let flags = UInt32(fields[3], radix: 16),
                    let mask = UInt32(fields[7], radix: 16)
                else { continue }
                // The file holds addresses in host (little-endian) byte order; keep them so.
                table.ipv4.append(
                    Route(interface: String(fields[0]), destination: destination, mask: mask, isUp: flags & 1 != 0)
                )
            }
        }
        if let text = try? String(contentsOfFile: sources.ipv6Routes, encoding: .utf8) {
            for line in text.split(separator: "\n") {
                let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                guard fields.count >= 10, fields[0].allSatisfy({ $0 == "0" }), fields[1] == "00",
                    let flags = UInt32(fields[8], radix: 16), flags & 1 != 0, fields[9] != "lo"
                else { continue }
                table.ipv6DefaultInterfaces.append(String(fields[9]))
            }
        }
        return table
    }

    func status(for host: String?) -> ReachabilityMonitor.Status {
        guard let host, !host.isEmpty else { return defaultRouteStatus }
        let lowered = host.lowercased()
        if lowered == "localhost" || lowered == "::1" || lowered.hasPrefix("127.") {
            return .reachable(via: .init(name: "lo", kind: .loopback))
        }
        guard let addresses = Self.resolveIPv4(host), !addresses.isEmpty else {
            // IPv6-only or unresolvable names: a default route is the best we can say.
            return Self.resolves(host) ? defaultRouteStatus : .notReachable
        }
        // The most specific up route that covers the address.
        for address in addresses {
            let match = ipv4.filter { $0.isUp && address & $0.mask == $0.destination & $0.mask }
                .max { $0.mask.nonzeroBitCount < $1.mask.nonzeroBitCount }
            if let match { return .reachable(via: interface(named: match.interface)) }
        }
        return .notReachable
    }

    var defaultRouteStatus: ReachabilityMonitor.Status {
        if let route = ipv4.first(where: { $0.isUp && $0.destination == 0 && $0.mask == 0 }) {
            return .reachable(via: interface(named: route.interface))
        }
        if let name = ipv6DefaultInterfaces.first { return .reachable(via: interface(named: name)) }
        return .notReachable
    }

    func interface(named name: String) -> ReachabilityMonitor.Interface {
        let base = "\(sources.interfaces)/\(name)"
        let kind: ReachabilityMonitor.Interface.Kind
        if name == "lo" || (try? String(contentsOfFile: base + "/type", encoding: .utf8))?.hasPrefix("772") == true {
            kind = .loopback
        } else if FileManager.default.fileExists(atPath: base + "/wireless")
            || FileManager.default.fileExists(atPath: base + "/phy80211")
        {
            kind = .wifi
        } else if ["wwan", "rmnet", "ppp", "usb"].contains(where: name.hasPrefix) {
            kind = .cellular
        } else if (try? String(contentsOfFile: base + "/type", encoding: .utf8))?.hasPrefix("1") == true {
            kind = .ethernet
        } else {
            kind = .other
        }
        return .init(name: name, kind: kind)
    }

    /// IPv4 addresses of `host` in the routing table's byte order.
    static func resolveIPv4(_ host: String) -> [UInt32]? {
        var hints = addrinfo()
        hints.ai_family = AF_INET
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &result) == 0 else { return nil }
        defer { freeaddrinfo(result) }
        var addresses: [UInt32] = []
        var cursor = result
        while let info = cursor {
            if let address = info.pointee.ai_addr {
                address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                    addresses.append($0.pointee.sin_addr.s_addr)
                }
            }
            cursor = info.pointee.ai_next
        }
        return addresses
    }

    static func resolves(_ host: String) -> Bool {
        var result: UnsafeMutablePointer<addrinfo>?
        defer { if result != nil { freeaddrinfo(result) } }
        return getaddrinfo(host, nil, nil, &result) == 0
    }
}
