import BridgeRPC
import HTTPTypes
import Testing
@testable import BridgeHTTP

/// `--auth none`: CIDR parsing and the loopback / allowed-network gate.
@Suite("CIDR networks and the --auth none gate", .tags(.unit))
struct NetworkGateTests {
    @Test("CIDR parsing for IPv4 and IPv6, host bits cleared, bad input refused")
    func parsing() {
        #expect(IPNetwork("192.168.1.77/24")?.description == "192.168.1.0/24")
        #expect(IPNetwork("10.0.0.7")?.prefixLength == 32)
        #expect(IPNetwork("fd00:6f61::1/64")?.description == "fd00:6f61::/64")
        #expect(IPNetwork("::1")?.prefixLength == 128)
        #expect(IPNetwork("0.0.0.0/0") != nil)
        for bad in ["", "192.168.1.0/33", "fd00::/129", "192.168.1/24", "300.1.1.1", "10.0.0.0/-1", "10.0.0.0/", "desk.local/24", "10.0.0.0/24/1", "fd00::/x"] {
            #expect(IPNetwork(bad) == nil, "\(bad) should be refused")
        }
    }

    @Test("membership: IPv4, IPv6 with zones and brackets, IPv4-mapped IPv6 counts as IPv4")
    func membership() throws {
        let lan = try #require(IPNetwork("192.168.1.0/24"))
        #expect(lan.contains("192.168.1.20"))
        #expect(lan.contains("192.168.1.20:51234"))
        #expect(lan.contains("::ffff:192.168.1.20"))
        #expect(lan.contains("[::ffff:192.168.1.20]:9099"))
        #expect(!lan.contains("192.168.2.20"))
        #expect(!lan.contains("fd00::1"))
        let odd = try #require(IPNetwork("10.1.2.128/25"))
        #expect(odd.contains("10.1.2.200") && !odd.contains("10.1.2.127"))
        let ula = try #require(IPNetwork("fd00:6f61::/64"))
        #expect(ula.contains("fd00:6f61::2"))
        #expect(ula.contains("[fd00:6f61::2%eth0]"))
        #expect(!ula.contains("fd00:6f62::2"))
        #expect(!ula.contains("192.168.1.20"))
        let linkLocal = try #require(IPNetwork("fe80::/10"))
        #expect(linkLocal.contains("fe80::e0bd:c1ff:fe52:1980%eth0"))
        #expect(IPNetwork("0.0.0.0/0")?.contains("203.0.113.9") == true)
    }

    @Test("the gate admits loopback (IPv4, IPv6, mapped) and allowed networks only; the refusal is JSON naming the peer")
    func gate() throws {
        let gate = NetworkGate(allowed: [try #require(IPNetwork("192.168.1.0/24"))])
        for admitted in ["127.0.0.1", "127.8.9.10", "::1", "::ffff:127.0.0.1", "192.168.1.9"] {
            #expect(gate.admits(admitted), "\(admitted)")
        }
        for refused in ["192.168.2.9", "10.0.0.1", "fd00::1", "::ffff:10.0.0.1", "garbage"] {
            #expect(!gate.admits(refused), "\(refused)")
        }
        #expect(!gate.admits(nil))
        let refusal = gate.refusal(for: "10.0.0.1")
        #expect(refusal.status == .forbidden)
        let body = try JSONValue(parsing: refusal.bodyText)
        #expect(body["error"] == "forbidden_network")
        #expect(body["message"]?.stringValue?.contains("10.0.0.1") == true)
        #expect(body["message"]?.stringValue?.contains("192.168.1.0/24") == true)
    }
}
