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
            guard case .invalidJSON = error else {
                Issue.record("unexpected \(error)")
                return
            }
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
    static let fingerprint = (0..<32).map { String(format: "%02X", $0 * 7 % 256) }.joined(separator: " ")
    static let pin = "sha256/" + Data((0..<32).map { UInt8($0 * 5 % 256) }).base64EncodedString()

    /// The columns a line takes in a terminal: its characters without ANSI escapes (all here are one cell wide).
    static func columns(_ line: String) -> Int {
        line.replacing(/\x{1B}\[[0-9;]*m/, with: "").count
    }

    @Test("the banner shows the QR code, the page URL and the expiry, and warns loudly without auth")
    func banner() throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let token = TokenSecret.generate(.pairing)
        let payload = PairingPayload(host: "192.168.1.20", session: "s", name: "desk", token: token)
        let text = try PairingBanner.text(payload: payload, expiresAt: now.addingTimeInterval(3600), port: 9099, now: now, ansiColors: false)
        let qr = try payload.qrCode().terminalLines(quietZone: 2, ansiColors: false)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
        for (line, row) in zip(lines, qr) { #expect(line.hasPrefix(row)) }
        #expect(text.contains("http://127.0.0.1:9099/pair"))
        #expect(text.contains("expires in 60 min"))
        #expect(!text.contains("oa-bridge app"), "no app that is documented nowhere")
        #expect(text.contains("http://192.168.1.20:9099/app"))
        // The token travels in the QR code only, not as text.
        #expect(!text.contains(token))
        let open = try PairingBanner.text(
            payload: PairingPayload(host: "192.168.1.20", session: "s", name: "desk", token: nil), expiresAt: nil, port: 9099)
        let openWords = open.replacing(/[█▀▄]|\x{1B}\[[0-9;]*m/, with: "").split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(openWords.contains("authentication is OFF in the bridge's settings (auth: none)") && !open.contains("--"))
        #expect(open.contains("\u{1B}[1;31m"))
    }

    @Test("code, quiet zone and text fit 80x24 (fewer than 24 rows: one is left for the cursor), with the fingerprint",
          arguments: ["192.168.1.20", "192.168.100.200", "10.0.0.5"])
    func fits80x24(host: String) throws {
        // Fails on the old code: the long link made an 81-column, 41-row code.
        let payload = PairingPayload(
            host: host, port: 65_535, session: UUID().uuidString, name: "desk-with-a-longer-name", token: TokenSecret.generate(.pairing),
            fallbacks: ["desk.tail1234.ts.net", "100.101.102.103"], pin: Self.pin)
        for colors in [false, true] {
            let text = try PairingBanner.text(
                payload: payload, expiresAt: Date().addingTimeInterval(3600), port: 65_535,
                certificateFingerprint: Self.fingerprint, ansiColors: colors)
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
            #expect(lines.count <= 23, "\(lines.count) rows")
            for line in lines { #expect(Self.columns(line) <= 80, "\(Self.columns(line)) columns: \(line)") }
            // The words beside the code, wrapped: read without the code and the line breaks.
            let words = text.replacing(/[█▀▄]|\x{1B}\[[0-9;]*m/, with: "").split(whereSeparator: \.isWhitespace).joined(separator: " ")
            #expect(words.contains("The first time, the phone warns \"Your connection is not private\""))
            #expect(text.contains("https://\(host):65535/app"))
            // The 32 bytes of the fingerprint, in order, across its lines.
            let shown = lines.map { $0.split(separator: " ").map(String.init).filter { $0.count == 2 && $0.allSatisfy(\.isHexDigit) } }
                .flatMap { $0 }
            #expect(shown.joined(separator: " ").contains(Self.fingerprint))
        }
    }

    @Test("a terminal too small for the code gets the sizes, the caller's command that saves it as an image and the link instead")
    func tooSmall() throws {
        let payload = PairingPayload(
            host: "192.168.1.20", port: 9100, session: "s", name: "desk", token: TokenSecret.generate(.pairing), pin: Self.pin)
        let commands = PairingBanner.Commands(show: "pair-it", savePNG: "pair-it as pairing.png")
        for size in [PairingBanner.TerminalSize(columns: 60, rows: 40), PairingBanner.TerminalSize(columns: 120, rows: 15)] {
            let text = try PairingBanner.text(
                payload: payload, expiresAt: nil, port: 9100, certificateFingerprint: Self.fingerprint, ansiColors: false, terminal: size,
                commands: commands)
            #expect(text.contains("This terminal (\(size.columns)×\(size.rows)) is too small for the pairing QR code"))
            #expect(text.contains("\n  pair-it as pairing.png\n"), "\(text)")
            #expect(text.split(whereSeparator: \.isWhitespace).joined(separator: " ").contains("'pair-it' shows a new one."), "\(text)")
            // Without the caller's commands (issue 31 item 5: the library names no flag), the same in words.
            let words = try PairingBanner.text(
                payload: payload, expiresAt: nil, port: 9100, certificateFingerprint: Self.fingerprint, ansiColors: false, terminal: size)
            #expect(!words.contains("--") && !words.contains("oa-bridge pair"), "\(words)")
            let flat = words.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            #expect(flat.contains("save it as an image") && flat.contains("the desktop's pairing command shows a new one."), "\(words)")
            #expect(text.contains(payload.qrText))
            #expect(!text.contains("▀") && !text.contains("▄"))
            for line in text.split(separator: "\n") { #expect(Self.columns(String(line)) <= max(size.columns, 40) || line.hasPrefix("  https://")) }
        }
        // A large terminal gets the code.
        let large = try PairingBanner.text(
            payload: payload, expiresAt: nil, port: 9100, ansiColors: false, terminal: .init(columns: 200, rows: 60))
        #expect(large.contains("▀") && !large.contains("too small"))
    }
}

@Suite("Short pairing link", .tags(.unit))
struct ShortPairingLinkTests {
    static let pinBytes = (0..<32).map { UInt8(($0 * 37 + 11) % 256) }
    static let pin = "sha256/" + Data(pinBytes).base64EncodedString()

    @Test("auth and TLS: https://host:port/app#1 + 78 digits; read back abridged with the code and the pin's first 16 bytes")
    func tokenAndPin() throws {
        let token = TokenSecret.generate(.pairing)
        let payload = PairingPayload(host: "192.168.1.20", session: "s", name: "desk", token: token, fallbacks: ["x.ts.net"], pin: Self.pin)
        let short = try #require(payload.shortAppURL)
        #expect(short.wholeMatch(of: /https:\/\/192\.168\.1\.20:9099\/app#1[0-9]{78}/) != nil, "\(short)")
        #expect(payload.qrText == short && PairingInfo(payload: payload).url == short)
        let read = try PairingPayload(scannedText: short)
        #expect(read.isAbridged && !payload.isAbridged)
        #expect(read.token == token)
        #expect(read.pinPrefix == Array(Self.pinBytes.prefix(16)))
        #expect(read.http == "https://192.168.1.20:9099" && read.ws == "wss://192.168.1.20:9099/")
        // The long link keeps working, with everything in it.
        #expect(try PairingPayload(scannedText: payload.appURL) == payload)
    }

    @Test("plaintext (#2, the code only), --auth none (#3, the pin only), neither (no fragment), IPv6")
    func otherKinds() throws {
        let token = TokenSecret.generate(.pairing)
        let plain = PairingPayload(host: "10.0.0.5", session: "s", name: "desk", token: token)
        let plainURL = try #require(plain.shortAppURL)
        #expect(plainURL.wholeMatch(of: /http:\/\/10\.0\.0\.5:9099\/app#2[0-9]{39}/) != nil)
        let readPlain = try PairingPayload(scannedText: plainURL)
        #expect(readPlain.token == token && readPlain.pin == nil && readPlain.ws == "ws://10.0.0.5:9099/")
        let open = PairingPayload(host: "fd00::5", session: "s", name: "desk", token: nil, pin: Self.pin)
        let openURL = try #require(open.shortAppURL)
        #expect(openURL.wholeMatch(of: /https:\/\/\[fd00::5\]:9099\/app#3[0-9]{39}/) != nil)
        let readOpen = try PairingPayload(scannedText: openURL)
        #expect(readOpen.token == nil && readOpen.pinPrefix == Array(Self.pinBytes.prefix(16)) && readOpen.http == "https://[fd00::5]:9099")
        #expect(PairingPayload(host: "10.0.0.5", session: "s", name: "d", token: nil).shortAppURL == "http://10.0.0.5:9099/app")
    }

    @Test("no short link for an old 32-byte code, a pin that is not SHA-256 or another WebSocket path: the long one")
    func fallsBackToLong() {
        let old = "oa_p_" + String(TokenSecret.generate(.access).dropFirst(5))
        for payload in [
            PairingPayload(host: "10.0.0.5", session: "s", name: "d", token: old, pin: Self.pin),
            PairingPayload(host: "10.0.0.5", session: "s", name: "d", token: TokenSecret.generate(.pairing), pin: "sha256/AAAA"),
            PairingPayload(host: "10.0.0.5", webSocketPath: "/ws", session: "s", name: "d", token: TokenSecret.generate(.pairing)),
        ] {
            #expect(payload.shortAppURL == nil)
            #expect(payload.qrText == payload.appURL)
        }
    }

    @Test("a damaged short link is refused by type: wrong length, unknown kind, a value over 2^128, https without a pin")
    func damaged() {
        let nines = String(repeating: "9", count: 39)
        let zeros = String(repeating: "0", count: 39)
        for text in [
            "https://h:9099/app#1" + zeros, "https://h:9099/app#4" + zeros, "https://h:9099/app#2" + nines,
            "https://h:9099/app#2" + zeros, "http://h:9099/app#1" + zeros + zeros + "1",
        ] {
            #expect(throws: PairingPayloadError.invalidFragment) { try PairingPayload(scannedText: text) }
        }
    }

    @Test("the QR code of a short link is small: version 5 at most for IPv4 (37 modules), 4 for a short address")
    func qrVersion() throws {
        for (host, most) in [("192.168.100.200", 5), ("192.168.1.20", 5), ("10.0.0.5", 4)] {
            let payload = PairingPayload(host: host, session: "s", name: "d", token: TokenSecret.generate(.pairing), pin: Self.pin)
            let code = try payload.qrCode()
            #expect(code.version <= most, "\(host): version \(code.version)")
            // Fails on the old code: the long link needed version 13 or more.
            #expect(try QRCode(text: payload.appURL).version >= 10)
        }
    }
}
