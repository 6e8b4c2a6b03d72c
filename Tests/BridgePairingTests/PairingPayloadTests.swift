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

    @Test("the QR code's URL: <http>/app#<base64url JSON>, read back by init(scannedText:) as are the JSON and white space")
    func appURL() throws {
        let payload = PairingPayload(
            host: "192.168.1.20", session: "s-1", name: "desk ü", token: "oa_p_" + String(repeating: "x", count: 43),
            fallbacks: ["desk.tail1234.ts.net"], pin: "sha256/" + String(repeating: "+/", count: 22) + "=")
        let url = payload.appURL
        #expect(url.hasPrefix("https://192.168.1.20:9099/app#"))
        let fragment = String(url.dropFirst("https://192.168.1.20:9099/app#".count))
        // base64url without padding: nothing a URL would need to escape.
        #expect(fragment.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") })
        var standard = fragment.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while standard.count % 4 != 0 { standard += "=" }
        #expect(Data(base64Encoded: standard).map { String(decoding: $0, as: UTF8.self) } == payload.jsonString())

        #expect(try PairingPayload(scannedText: url) == payload)
        #expect(try PairingPayload(scannedText: "  \(url)\n") == payload)
        #expect(try PairingPayload(scannedText: payload.jsonString()) == payload)
        #expect(try PairingPayload.decode(url) == payload)
        let padded = url + String(repeating: "=", count: (4 - fragment.count % 4) % 4)
        #expect(try PairingPayload(scannedText: padded) == payload)  // padded base64url too
        let plain = PairingPayload(host: "10.0.0.2", session: "s", name: "n", token: nil)
        #expect(plain.appURL.hasPrefix("http://10.0.0.2:9099/app#"))
        #expect(try PairingPayload(scannedText: plain.appURL) == plain)
    }

    @Test("text that is not a pairing code is refused by type, and the message never repeats it")
    func scannedTextErrors() {
        let secret = "oa_p_SECRETSECRET"
        #expect(throws: PairingPayloadError.unrecognized) { try PairingPayload(scannedText: "hello \(secret)") }
        #expect(throws: PairingPayloadError.missingFragment) { try PairingPayload(scannedText: "https://desk:9099/app") }
        #expect(throws: PairingPayloadError.missingFragment) { try PairingPayload(scannedText: "https://desk:9099/app#") }
        #expect(throws: PairingPayloadError.invalidFragment) { try PairingPayload(scannedText: "https://desk:9099/app#\(secret)!") }
        let notPayload = "https://desk:9099/app#" + Data(#"{"token":"\#(secret)"}"#.utf8).base64EncodedString()
        do {
            _ = try PairingPayload(scannedText: notPayload)
            Issue.record("a JSON object without the payload's fields was accepted")
        } catch {
            guard case .invalidJSON = error else { Issue.record("unexpected \(error)"); return }
            #expect(!error.description.contains(secret))
        }
        #expect(throws: PairingPayloadError.self) { try PairingPayload(scannedText: "{\"ws\": \(secret)") }
    }

    @Test("/api/pair/info's body: the payload's fields and url, decodable as either")
    func info() throws {
        let payload = PairingPayload(host: "192.168.1.20", session: "s", name: "desk", token: "oa_p_t", pin: "sha256/abc=")
        let text = PairingInfo(payload: payload).jsonString()
        let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
        #expect(object?.keys.sorted() == ["fallbacks", "http", "name", "pin", "session", "token", "url", "ws"])
        #expect(object?["url"] as? String == payload.appURL)
        #expect(try PairingPayload.decode(text) == payload)
        #expect(try JSONDecoder().decode(PairingInfo.self, from: Data(text.utf8)) == PairingInfo(payload: payload))
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
        #expect(!text.contains("oa-bridge app"), "no app that is documented nowhere")
        #expect(text.contains("http://192.168.1.20:9099/app"))
        // The token travels in the QR code only, not as text.
        #expect(!text.contains(token))
        let open = try PairingBanner.text(
            payload: PairingPayload(host: "192.168.1.20", session: "s", name: "desk", token: nil), expiresAt: nil, port: 9099)
        #expect(open.contains("authentication is OFF"))
        #expect(open.contains("\u{1B}[1;31m"))
    }

    @Test("the banner prepares the user for the first-time certificate warning, with the fingerprint to compare")
    func certificateWarning() throws {
        let payload = PairingPayload(
            host: "192.168.1.20", session: "s", name: "desk", token: TokenSecret.generate(.pairing), pin: "sha256/AAAA")
        let fingerprint = (0..<32).map { String(format: "%02X", $0 * 7 % 256) }.joined(separator: " ")
        let text = try PairingBanner.text(payload: payload, expiresAt: nil, port: 9099, certificateFingerprint: fingerprint, ansiColors: false)
        #expect(text.contains("Your connection is not private"))
        #expect(text.contains("https://192.168.1.20:9099/app"))
        let lines = text.split(separator: "\n").map(String.init)
        // The 32 bytes, in two lines of 16 as a browser's certificate viewer groups them.
        #expect(lines.contains("  " + fingerprint.split(separator: " ").prefix(16).joined(separator: " ")))
        #expect(lines.contains("  " + fingerprint.split(separator: " ").suffix(16).joined(separator: " ")))
        // Every line but the QR code's fits an 80-column terminal.
        let qrRows = Set(try payload.qrCode().terminalString(quietZone: 2, ansiColors: false).split(separator: "\n").map(String.init))
        for line in lines where !qrRows.contains(line) {
            #expect(line.count <= 80, "\(line.count) columns: \(line)")
        }
    }
}
