import Foundation
import Testing

@testable import WebImageServer

// Every address here is a literal classified without connecting: nothing is sent anywhere.
@Suite("Source rules")
struct SourcePolicyTests {
    @Test("Every spelling of an IPv4 address parses to the same address")
    func ipv4Forms() {
        let loopback = IPAddress.v4(0x7F00_0001)
        for form in [
            "127.0.0.1", "127.1", "127.0.1", "2130706433", "0x7f000001", "0x7F.1", "0177.0.0.1", "0177.1", "127.0.0.1.",
        ] {
            #expect(IPAddress(form) == loopback, "\(form)")
        }
        for name in ["example.com", "1.2.3.4.5", "256.0.0.1", "08.1.1.1", "", "1..1", "4294967296"] {
            #expect(IPAddress(name) == nil, "\(name) is not an address")
        }
        #expect(IPAddress("[::1]") == IPAddress("0:0:0:0:0:0:0:1"))
        #expect(IPAddress("::ffff:127.0.0.1") == IPAddress("::ffff:7f00:1"))
        #expect(IPAddress("fe80::1%eth0")?.kind == .linkLocal)
        for bad in ["1:2:3:4:5:6:7:8:9", "1::2::3", "12345::", "::g", ":::1"] {
            #expect(IPAddress(bad) == nil, "\(bad)")
        }
    }

    @Test(
        "Address classes",
        arguments: [
            ("127.0.0.1", IPAddress.Kind.loopback), ("127.255.0.9", .loopback), ("::1", .loopback),
            ("10.1.2.3", .privateNetwork), ("172.16.0.1", .privateNetwork), ("172.31.255.255", .privateNetwork),
            ("172.32.0.1", .publicAddress), ("192.168.1.1", .privateNetwork), ("100.64.0.1", .sharedAddressSpace),
            ("100.128.0.1", .publicAddress), ("169.254.169.254", .linkLocal), ("fe80::1", .linkLocal),
            ("fc00::1", .uniqueLocal),
            ("fd12:3456::1", .uniqueLocal), ("224.0.0.1", .multicast), ("ff02::1", .multicast),
            ("0.0.0.0", .unspecified),
            ("0.1.2.3", .unspecified), ("::", .unspecified), ("240.0.0.1", .reserved), ("255.255.255.255", .reserved),
            ("::ffff:127.0.0.1", .embedsIPv4), ("::ffff:8.8.8.8", .embedsIPv4), ("::127.0.0.1", .embedsIPv4),
            ("64:ff9b::7f00:1", .embedsIPv4), ("2002:7f00:1::", .embedsIPv4), ("2001:0:4136:e378::1", .embedsIPv4),
            ("8.8.8.8", .publicAddress), ("2606:4700::1111", .publicAddress),
        ]
    )
    func kinds(address: String, kind: IPAddress.Kind) throws {
        #expect(try #require(IPAddress(address)).kind == kind)
    }

    @Test("Loopback in every spelling is refused by default and allowed by --allow-loopback; embedded IPv4 never")
    func loopbackRules() throws {
        let strict = SourcePolicy()
        let loopbackAllowed = SourcePolicy(allowsLoopback: true)
        for source in [
            "http://127.0.0.1:8080/a.png", "http://localhost/a.png", "http://LOCALHOST./a.png",
            "http://img.localhost/a",
            "http://[::1]/a.png", "http://127.1/a.png", "http://2130706433/a.png", "http://0x7f000001/a.png",
            "http://0177.0.0.1/a.png",
        ] {
            #expect(throws: ProxyError.self, "\(source)") { try strict.check(source) }
            #expect(throws: Never.self, "\(source)") { try loopbackAllowed.check(source) }
        }
        for source in [
            "http://[::ffff:127.0.0.1]/a.png", "http://[::ffff:7f00:1]/", "http://0.0.0.0/", "http://224.0.0.1/",
        ] {
            #expect(throws: ProxyError.self, "\(source)") { try loopbackAllowed.check(source) }
            #expect(throws: ProxyError.self) {
                try SourcePolicy(allowsLoopback: true, allowsPrivateNetworks: true).check(source)
            }
        }
        do {
            try strict.check("http://127.1/a.png")
        } catch {
            #expect(error.status == 403 && error.code == .sourceNotAllowed)
            #expect(
                error.message.contains("127.1 (127.0.0.1) is a loopback address (--allow-loopback)"),
                "\(error.message)"
            )
        }
        // Private networks need their own flag.
        for source in [
            "http://10.0.0.1/", "http://192.168.0.10/", "http://169.254.169.254/latest", "http://[fd00::1]/",
        ] {
            #expect(throws: ProxyError.self) { try loopbackAllowed.check(source) }
            #expect(throws: Never.self) { try SourcePolicy(allowsPrivateNetworks: true).check(source) }
        }
        // The address a name resolved to is checked the same way.
        let url = URL(string: "http://images.example/a.png")!
        #expect(throws: ProxyError.self) { try strict.check(connectingTo: .v4(0x7F00_0001), host: url.host) }
        #expect(throws: Never.self) { try strict.check(connectingTo: IPAddress("8.8.8.8")!, host: url.host) }
        // The connection hook's form: the address as text, a reason when refused.
        #expect(strict.refusal(connectingTo: "127.0.0.1")?.contains("loopback") == true)
        #expect(strict.refusal(connectingTo: "::1")?.contains("loopback") == true)
        #expect(strict.refusal(connectingTo: "10.1.2.3")?.contains("--allow-private-networks") == true)
        #expect(strict.refusal(connectingTo: "93.184.216.34") == nil)
        #expect(strict.refusal(connectingTo: "2606:2800:220:1:248:1893:25c8:1946") == nil)
        #expect(SourcePolicy(allowsPrivateNetworks: true).refusal(connectingTo: "10.1.2.3") == nil)
        #expect(loopbackAllowed.refusal(connectingTo: "127.0.0.1") == nil)
        #expect(loopbackAllowed.refusal(connectingTo: "::ffff:127.0.0.1") != nil)
        #expect(strict.refusal(connectingTo: "not-an-address")?.contains("not an IP address") == true)
    }

    @Test("Schemes and malformed sources")
    func schemes() {
        for (source, status) in [
            ("file:///etc/passwd", 403), ("ftp://a.test/x.png", 403), ("gopher://a.test/", 403), ("not a url", 400),
            ("/relative/path.png", 400),
        ] {
            #expect {
                try SourcePolicy().check(source)
            } throws: { ($0 as? ProxyError)?.status == status }
        }
    }

    @Test("--allow-source compares scheme, host, port and path segments, never string prefixes")
    func allowList() throws {
        let policy = SourcePolicy(
            allowsLoopback: true,
            allowedPrefixes: [
                try SourcePrefix("https://cdn.example.com/images"), try SourcePrefix("http://127.0.0.1:8080"),
            ]
        )
        for allowed in [
            "https://cdn.example.com/images/a.png", "https://CDN.example.com:443/images/x/y.jpg",
            "https://cdn.example.com/images", "http://127.0.0.1:8080/anything/at/all.png",
        ] {
            #expect(throws: Never.self, "\(allowed)") { try policy.check(allowed) }
        }
        for refused in [
            "https://cdn.example.com.evil.test/images/a.png", "https://cdn.example.com/images-private/a.png",
            "https://cdn.example.com/other/a.png", "http://cdn.example.com/images/a.png",
            "https://cdn.example.com:8443/images/a.png", "https://cdn.example.com/images/../secret/a.png",
            "https://cdn.example.com/images/%2e%2e/secret.png", "http://127.0.0.1:8081/a.png",
            "https://user@cdn.example.com.evil.test/images/a.png",
        ] {
            #expect(throws: ProxyError.self, "\(refused)") { try policy.check(refused) }
        }
        #expect(throws: ProxyError.self) { try SourcePrefix("cdn.example.com") }
        #expect(throws: ProxyError.self) { try SourcePrefix("ftp://cdn.example.com/") }
    }
}
