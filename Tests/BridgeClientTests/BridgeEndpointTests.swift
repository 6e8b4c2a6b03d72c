import BridgeDiscovery
import Testing
@testable import BridgeClient

@Suite("Endpoints: manual addresses and discovered services", .tags(.unit))
struct BridgeEndpointTests {
    @Test("manual addresses parse with the default port 9099", arguments: [
        ("desk.local", "ws://desk.local:9099/"),
        ("desk.local:9100", "ws://desk.local:9100/"),
        ("192.168.1.20", "ws://192.168.1.20:9099/"),
        ("192.168.1.20:80", "ws://192.168.1.20:80/"),
        ("[fd00::2]:9100", "ws://[fd00::2]:9100/"),
        ("[fd00::2]", "ws://[fd00::2]:9099/"),
        ("fd00::2", "ws://[fd00::2]:9099/"),
        ("fe80::1%eth0", "ws://[fe80::1%25eth0]:9099/"),
        ("[fe80::1%25eth0]:9099", "ws://[fe80::1%25eth0]:9099/"),
        ("ws://desk:9099/bridge", "ws://desk:9099/bridge"),
    ])
    func manual(input: String, url: String) throws {
        #expect(try BridgeEndpoint.manual(input).url == url)
    }

    @Test("bad addresses say what is wrong", arguments: ["", "desk:0", "desk:99999", "desk:abc", "[fd00::2", "[fd00::2]x", ":9099"])
    func invalid(input: String) {
        #expect(throws: BridgeClientError.self) { try BridgeEndpoint.manual(input) }
    }

    @Test("a discovered service yields IPv4 first, then global IPv6, then link-local with its zone, on the TXT path")
    func fromService() {
        let service = ResolvedService(
            instance: ServiceInstance(name: "Desk", type: "_openagents._tcp"),
            hostName: "desk.local", port: 9100,
            addresses: [
                ServiceAddress(ip: "fe80::1", family: .ipv6, zone: "eth0"),
                ServiceAddress(ip: "fd00::2", family: .ipv6),
                ServiceAddress(ip: "198.18.0.2", family: .ipv4),
            ],
            txt: ["path": "/ws"], interfaces: ["eth0"])
        #expect(BridgeEndpoint.candidates(for: service).map(\.url) == [
            "ws://198.18.0.2:9100/ws", "ws://[fd00::2]:9100/ws", "ws://[fe80::1%25eth0]:9100/ws",
        ])
        #expect(BridgeEndpoint.candidates(for: service).allSatisfy { $0.source == .mdns })
    }
}
