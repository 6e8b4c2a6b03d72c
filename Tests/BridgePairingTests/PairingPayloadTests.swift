import BridgePairing
import BridgePairingUI
import Foundation
import Testing

@Suite("Pairing payload", .tags(.unit))
struct PairingPayloadTests {
    @Test("JSON has the documented fields, unescaped URLs, and round-trips")
    func json() throws {
        let payload = PairingPayload(
            host: "192.168.1.20", webSocketPath: "/ws", session: "abc", name: "studio", token: "oa_p_x", fallbacks: ["studio.ts.net"])
        #expect(payload.ws == "ws://192.168.1.20:9099/ws")
        #expect(payload.http == "http://192.168.1.20:9099")
        let json = payload.jsonString()
        #expect(json == #"{"fallbacks":["studio.ts.net"],"http":"http://192.168.1.20:9099","name":"studio","session":"abc","token":"oa_p_x","ws":"ws://192.168.1.20:9099/ws"}"#)
        #expect(try PairingPayload.decode(json) == payload)
    }

    @Test("without auth the token key is absent, not null")
    func noToken() throws {
        let json = PairingPayload(host: "10.0.0.2", port: 8080, webSocketPath: "rpc", session: "s", name: "n", token: nil).jsonString()
        #expect(!json.contains("token"))
        #expect(json.contains(#""ws":"ws://10.0.0.2:8080/rpc""#))
        let object = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
        #expect(object?.keys.sorted() == ["fallbacks", "http", "name", "session", "ws"])
    }

    @Test("IPv6 hosts are bracketed in URLs")
    func ipv6() {
        let payload = PairingPayload(host: "fd00::5", session: "s", name: "n", token: nil)
        #expect(payload.ws == "ws://[fd00::5]:9099/")
        #expect(PairingPayload(host: "[fd00::5]", session: "s", name: "n", token: nil).http == "http://[fd00::5]:9099")
    }

    @Test("the LAN address is the first real IPv4, then IPv6; loopback, link-local and virtual interfaces lose")
    func lanAddressChoice() {
        typealias A = LANAddress.InterfaceAddress
        let lo = A(interface: "lo", address: "127.0.0.1", isIPv6: false)
        let lo6 = A(interface: "lo", address: "::1", isIPv6: true)
        let linkLocal = A(interface: "eth0", address: "169.254.3.4", isIPv6: false)
        let linkLocal6 = A(interface: "eth0", address: "fe80::1", isIPv6: true)
        let docker = A(interface: "docker0", address: "172.17.0.1", isIPv6: false)
        let tailscale = A(interface: "tailscale0", address: "100.101.102.103", isIPv6: false)
        let lan = A(interface: "wlan0", address: "192.168.1.20", isIPv6: false)
        let lan2 = A(interface: "eth1", address: "10.0.0.9", isIPv6: false)
        let global6 = A(interface: "eth0", address: "2001:db8::7", isIPv6: true)

        #expect(LANAddress.pick(from: [lo, lo6, linkLocal, docker, tailscale, lan, lan2, global6]) == "192.168.1.20")
        #expect(LANAddress.pick(from: [lo, docker, global6]) == "172.17.0.1")
        #expect(LANAddress.pick(from: [lo, lo6, linkLocal, linkLocal6, global6]) == "[2001:db8::7]")
        #expect(LANAddress.pick(from: [lo, lo6, linkLocal, linkLocal6]) == nil)
        #expect(LANAddress.pick(from: []) == nil)
    }

    @Test("this machine's interfaces are listed and the pick is one of them")
    func realInterfaces() {
        let addresses = LANAddress.interfaceAddresses()
        #expect(addresses.contains { $0.address == "127.0.0.1" })
        if let picked = LANAddress.preferred() {
            let bare = picked.trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
            #expect(addresses.contains { $0.address == bare })
            #expect(bare != "127.0.0.1" && !bare.hasPrefix("169.254.") && !bare.lowercased().hasPrefix("fe80"))
        }
    }
}

@Suite("Pairing banner", .tags(.unit))
struct PairingBannerTests {
    @Test("the banner shows the QR code, the page URL and the expiry, and warns loudly without auth")
    func banner() throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let token = TokenSecret.generate(.pairing)
        let payload = PairingPayload(host: "192.168.1.20", session: "s", name: "desk", token: token)
        let text = try PairingBanner.text(payload: payload, expiresAt: now.addingTimeInterval(3600), port: 9099, now: now, ansiColors: false)
        #expect(text.hasPrefix(try payload.qrCode().terminalString(quietZone: 2, ansiColors: false)))
        #expect(text.contains("http://127.0.0.1:9099/pair"))
        #expect(text.contains("expires in 60 min"))
        // The token travels in the QR code only, not as text.
        #expect(!text.contains(token))
        let open = try PairingBanner.text(
            payload: PairingPayload(host: "192.168.1.20", session: "s", name: "desk", token: nil), expiresAt: nil, port: 9099)
        #expect(open.contains("authentication is OFF"))
        #expect(open.contains("\u{1B}[1;31m"))
    }
}
