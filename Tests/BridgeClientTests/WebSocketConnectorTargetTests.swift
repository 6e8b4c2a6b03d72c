import NIOHTTP1
import Testing
@testable import BridgeClient

@Suite("WebSocketConnector.Target: URLs with IPv4, IPv6 and zones", .tags(.unit))
struct WebSocketConnectorTargetTests {
    @Test("an IPv6 literal with an RFC 6874 zone: host decoded, Host header %25-encoded, Origin without the zone")
    func zone() throws {
        let target = try WebSocketConnector.Target(url: "ws://[fe80::1%25eth0]:9099/path?x=1")
        #expect(target.host == "fe80::1%eth0")
        #expect(target.port == 9099)
        #expect(target.path == "/path?x=1")
        #expect(target.authority == "[fe80::1%25eth0]:9099")
        #expect(target.origin == "ws://[fe80::1]")
        #expect(target.displayAddress == "[fe80::1%eth0]:9099")
        #expect(target.url == "ws://[fe80::1%25eth0]:9099/path?x=1")
        let head = WebSocketConnector.requestHead(
            target: target, headers: ["Authorization": BridgeCredential.bearer("oa_at_x").authorization])
        #expect(head.headers["Host"] == ["[fe80::1%25eth0]:9099"])
        #expect(head.headers["Authorization"] == ["Bearer oa_at_x"])
        #expect(head.uri == "/path?x=1")
    }

    @Test("a bare % zone is accepted too; IPv4, names, wss and default ports")
    func forms() throws {
        #expect(try WebSocketConnector.Target(url: "ws://[fe80::1%eth0]:1/").host == "fe80::1%eth0")
        let v4 = try WebSocketConnector.Target(url: "ws://192.168.1.20:9099")
        #expect(v4.host == "192.168.1.20" && v4.path == "/" && !v4.isIPv6 && v4.authority == "192.168.1.20:9099")
        let name = try WebSocketConnector.Target(url: "wss://desk.local/")
        #expect(name.isSecure && name.port == 443 && name.origin == "wss://desk.local")
        #expect(try WebSocketConnector.Target(url: "ws://[::1]").port == 80)
        #expect(WebSocketConnector.Target.isIPAddress("10.0.0.1"))
        #expect(!WebSocketConnector.Target.isIPAddress("desk.local"))
        #expect(!WebSocketConnector.Target.isIPAddress("1.2.3"))
    }

    @Test("what cannot be a WebSocket URL is refused with the reason", arguments: [
        "ftp://host:9099/", "ws://", "ws://[fe80::1:9099/", "ws://fe80::1:9099/", "ws://[fe80::1%25]:9099/",
        "ws://host:0/", "ws://host:99999/", "ws://[zz::1]:9099/", "ws://user@host:9099/", "ws://[::1]x/",
    ])
    func invalid(url: String) {
        #expect(throws: WebSocketConnectorError.self) { try WebSocketConnector.Target(url: url) }
    }
}
