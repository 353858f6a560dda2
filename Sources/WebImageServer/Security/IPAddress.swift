import Foundation

/// An IPv4 or IPv6 address, parsed from every form a URL host can spell one in, and the class
/// of network it belongs to, for the proxy's source rules.
public enum IPAddress: Sendable, Hashable, CustomStringConvertible {
    case v4(UInt32)
    case v6([UInt8])

    /// What kind of network an address is on.
    public enum Kind: String, Sendable, Hashable {
        case publicAddress = "public"
        /// 127.0.0.0/8, ::1.
        case loopback
        /// 10/8, 172.16/12, 192.168/16.
        case privateNetwork = "private"
        /// 100.64.0.0/10 (carrier-grade NAT).
        case sharedAddressSpace = "CGNAT"
        /// 169.254/16, fe80::/10.
        case linkLocal = "link-local"
        /// fc00::/7.
        case uniqueLocal = "unique-local"
        /// 224/4, ff00::/8.
        case multicast
        /// 0.0.0.0/8, ::.
        case unspecified
        /// 240/4 and 255.255.255.255.
        case reserved
        /// IPv6 that carries an IPv4 address (mapped ::ffff:0:0/96, compatible ::/96, NAT64
        /// 64:ff9b::/96, 6to4 2002::/16, Teredo 2001::/32): refused whatever it embeds.
        case embedsIPv4 = "IPv4-embedding IPv6"
    }

    /// Parses `host` (brackets allowed around IPv6) as an address: dotted IPv4 with 1–4 parts,
    /// each decimal, `0x` hex or `0`-led octal (`127.1`, `2130706433`, `0x7f000001`,
    /// `0177.0.0.1`, as URL parsers and `inet_aton` read them), or IPv6 with `::` and an
    /// optional dotted tail. `nil` when it is a name, not an address.
    public init?(_ host: String) {
        var text = Substring(host)
        if text.hasPrefix("[") && text.hasSuffix("]") { text = text.dropFirst().dropLast() }
        if text.contains(":") {
            guard let bytes = Self.parseV6(text) else { return nil }
            self = .v6(bytes)
        } else {
            guard let value = Self.parseV4(text) else { return nil }
            self = .v4(value)
        }
    }

    public var kind: Kind {
        switch self {
        case .v4(let value): return Self.kind(ofV4: value)
        case .v6(let bytes):
            if bytes == [UInt8](repeating: 0, count: 16) { return .unspecified }
            if bytes == [UInt8](repeating: 0, count: 15) + [1] { return .loopback }
            let prefix96 = Array(bytes[0..<12])
            if prefix96 == [UInt8](repeating: 0, count: 10) + [0xFF, 0xFF]  // mapped
                || prefix96 == [UInt8](repeating: 0, count: 12)  // compatible (deprecated)
                || prefix96 == [0x00, 0x64, 0xFF, 0x9B] + [UInt8](repeating: 0, count: 8)  // NAT64
                || bytes[0] == 0x20 && bytes[1] == 0x02  // 6to4
                || bytes[0] == 0x20 && bytes[1] == 0x01 && bytes[2] == 0 && bytes[3] == 0  // Teredo
            {
                return .embedsIPv4
            }
            if bytes[0] == 0xFF { return .multicast }
            if bytes[0] == 0xFE && bytes[1] & 0xC0 == 0x80 { return .linkLocal }
            if bytes[0] & 0xFE == 0xFC { return .uniqueLocal }
            return .publicAddress
        }
    }

    public var description: String {
        switch self {
        case .v4(let value):
            return [24, 16, 8, 0].map { String(value >> UInt32($0) & 0xFF) }.joined(separator: ".")
        case .v6(let bytes):
            return stride(from: 0, to: 16, by: 2).map {
                String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16)
            }
            .joined(separator: ":")
        }
    }

    private static func kind(ofV4 value: UInt32) -> Kind {
        let first = value >> 24
        let second = value >> 16 & 0xFF
        switch first {
        case 0: return .unspecified
        case 10: return .privateNetwork
        case 127: return .loopback
        case 100 where second & 0xC0 == 64: return .sharedAddressSpace
        case 169 where second == 254: return .linkLocal
        case 172 where second & 0xF0 == 16: return .privateNetwork
        case 192 where second == 168: return .privateNetwork
        case 224...239: return .multicast
        case 240...255: return .reserved
        default: return .publicAddress
        }
    }

    private static func parseV4(_ text: Substring) -> UInt32? {
        var parts = text.split(separator: ".", omittingEmptySubsequences: false)
        if parts.count > 1, parts.last?.isEmpty == true { parts.removeLast() }  // "127.0.0.1."
        guard (1...4).contains(parts.count) else { return nil }
        var numbers: [UInt64] = []
        for part in parts {
            guard let number = parseV4Part(part) else { return nil }
            numbers.append(number)
        }
        var value: UInt64 = 0
        for (index, number) in numbers.dropLast().enumerated() {
            guard number <= 0xFF else { return nil }
            value |= number << UInt64(8 * (3 - index))
        }
        let last = numbers[numbers.count - 1]
        guard last < UInt64(1) << UInt64(8 * (5 - numbers.count)) else { return nil }
        return UInt32(value | last)
    }

    private static func parseV4Part(_ part: Substring) -> UInt64? {
        guard !part.isEmpty, part.count <= 32 else { return nil }
        let lower = part.lowercased()
        if lower.hasPrefix("0x") { return lower.count == 2 ? 0 : UInt64(lower.dropFirst(2), radix: 16) }
        if lower.count > 1, lower.hasPrefix("0") { return UInt64(lower.dropFirst(), radix: 8) }
        return UInt64(lower, radix: 10)
    }

    private static func parseV6(_ text: Substring) -> [UInt8]? {
        var text = text
        if let zone = text.firstIndex(of: "%") { text = text[..<zone] }  // fe80::1%eth0
        let halves = text.components(separatedBy: "::")
        guard halves.count <= 2 else { return nil }
        func groups(_ part: String) -> [UInt16]? {
            guard !part.isEmpty else { return [] }
            var result: [UInt16] = []
            let pieces = part.split(separator: ":", omittingEmptySubsequences: false)
            for (index, piece) in pieces.enumerated() {
                if index == pieces.count - 1, piece.contains(".") {
                    guard let v4 = parseStrictDottedV4(piece) else { return nil }
                    result += [UInt16(v4 >> 16), UInt16(v4 & 0xFFFF)]
                } else {
                    guard (1...4).contains(piece.count), let group = UInt16(piece, radix: 16) else { return nil }
                    result.append(group)
                }
            }
            return result
        }
        guard let head = groups(halves[0]) else { return nil }
        let tail = halves.count == 2 ? groups(halves[1]) : []
        guard let tail else { return nil }
        let missing = 8 - head.count - tail.count
        guard halves.count == 2 ? missing >= 1 : missing == 0 else { return nil }
        let all = head + [UInt16](repeating: 0, count: max(0, missing)) + tail
        return all.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
    }

    /// The dotted tail of an IPv6 address: exactly four decimal parts.
    private static func parseStrictDottedV4(_ text: Substring) -> UInt32? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var value: UInt32 = 0
        for part in parts {
            guard let byte = UInt8(part) else { return nil }
            value = value << 8 | UInt32(byte)
        }
        return value
    }
}
