import Testing
@testable import BridgeDiscovery

@Suite("Service types, addresses and the bridge TXT record", .tags(.unit))
struct ServiceTypeTests {
    @Test("valid service types parse and normalise", arguments: [
        ("_openagents._tcp", "_openagents._tcp"),
        ("_openagents._tcp.local.", "_openagents._tcp"),
        ("_ssh._tcp.", "_ssh._tcp"),
        ("_a-b._udp", "_a-b._udp"),
    ])
    func validTypes(input: String, expected: String) throws {
        #expect(try ServiceType(input).rawValue == expected)
    }

    @Test("invalid service types are rejected with a message that shows the right form", arguments: [
        "openagents._tcp", "_openagents", "_openagents._xyz", "_._tcp", "_thisnameiswaytoolong._tcp", "_bad name._tcp", "",
    ])
    func invalidTypes(input: String) {
        #expect(throws: DiscoveryError.invalidServiceType(input)) { try ServiceType(input) }
        #expect(DiscoveryError.invalidServiceType(input).description.contains("_name._tcp"))
    }

    @Test("URL hosts bracket IPv6 and carry the zone of link-local addresses only")
    func urlHosts() {
        #expect(ServiceAddress(ip: "198.18.0.2", family: .ipv4).urlHost == "198.18.0.2")
        #expect(ServiceAddress(ip: "fd00::2", family: .ipv6, zone: "eth0").urlHost == "[fd00::2]")
        #expect(ServiceAddress(ip: "fe80::1", family: .ipv6, zone: "eth0").urlHost == "[fe80::1%25eth0]")
        #expect(ServiceAddress(ip: "fe80::1", family: .ipv6, zone: "eth0").description == "fe80::1%eth0")
        #expect(ServiceAddress(ip: "febf::1", family: .ipv6).isLinkLocal)
        #expect(!ServiceAddress(ip: "fec0::1", family: .ipv6).isLinkLocal)
        #expect(!ServiceAddress(ip: "fe80.example", family: .ipv4).isLinkLocal)
    }

    @Test("service names are 1 to 63 bytes")
    func names() throws {
        #expect(throws: DiscoveryError.self) { try ServiceRegistration(name: "", port: 1) }
        #expect(throws: DiscoveryError.self) { try ServiceRegistration(name: String(repeating: "é", count: 32), port: 1) }
        #expect(try ServiceRegistration(name: String(repeating: "a", count: 63), port: 1).name.count == 63)
    }

    @Test("the bridge TXT record carries the documented keys and no token")
    func bridgeTXT() throws {
        let txt = try BridgeTXT.record(installID: "6f1c2b3a-0000-4000-8000-000000000001", auth: "token", path: "/")
        #expect(txt.dictionary == [
            "txtvers": "1", "proto": "0.2,1", "id": "6f1c2b3a-0000-4000-8000-000000000001",
            "auth": "token", "path": "/", "ver": "0.1.0",
        ])
        #expect(txt.entries.first?.key == "txtvers")  // RFC 6763 §6.7: txtvers first
        #expect(!txt.strings.contains { String(decoding: $0, as: UTF8.self).contains("oa_") })
    }
}
