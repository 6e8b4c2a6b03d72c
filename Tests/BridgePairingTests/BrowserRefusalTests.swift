import BridgePairing
import Testing

/// Issue 27 item 1: the browser check every upgrade and state-changing request goes through.
@Suite("Browser origin and host checks", .tags(.unit))
struct BrowserRefusalTests {
    let names: Set<String> = ["desk", "desk.local", "desk.tail1234.ts.net"]

    private func refusal(_ origin: String?, host: String?, tls: Bool = false) -> NetworkPolicy.BrowserRefusal? {
        NetworkPolicy.browserRefusal(origin: origin, host: host, names: names, checkHostName: !tls)
    }

    @Test("no Origin, or a ws:// one (native clients), passes, whatever the Host")
    func native() {
        #expect(refusal(nil, host: "anything.example:9099") == nil)
        #expect(refusal("", host: nil) == nil)
        // oa-bridge connect by a Tailscale name the bridge does not know as its own (the lab's LAN-cut fallback).
        #expect(refusal("ws://desk.tail-lab.ts.net:9099", host: "desk.tail-lab.ts.net:9099") == nil)
        #expect(refusal("wss://somewhere.example:9099", host: "somewhere.example:9099") == nil)
    }

    @Test("another site, null, several origins and an origin of another port are refused")
    func foreign() {
        #expect(refusal("https://evil.example", host: "127.0.0.1:9099") == .foreignOrigin)
        #expect(refusal("null", host: "127.0.0.1:9099") == .foreignOrigin)
        #expect(refusal("http://127.0.0.1:9099, http://evil.example", host: "127.0.0.1:9099") == .foreignOrigin)
        #expect(refusal("http://127.0.0.2:8000", host: "127.0.0.1:9099") == .foreignOrigin)
        #expect(refusal("http://127.0.0.1:9098", host: "127.0.0.1:9099") == .foreignOrigin)
    }

    @Test("the bridge's own pages pass: addresses, localhost and its names")
    func own() {
        #expect(refusal("http://127.0.0.1:9099", host: "127.0.0.1:9099") == nil)
        #expect(refusal("http://localhost:9099", host: "localhost:9099") == nil)
        #expect(refusal("http://[::1]:9099", host: "[::1]:9099") == nil)
        #expect(refusal("https://192.168.1.20:9099", host: "192.168.1.20:9099") == nil)
        #expect(refusal("http://desk.local:9099", host: "desk.local:9099") == nil)
        #expect(refusal("http://DESK:9099", host: "desk:9099") == nil)
        #expect(refusal("http://desk.tail1234.ts.net:9099", host: "desk.tail1234.ts.net:9099") == nil)
    }

    @Test("DNS rebinding: a page whose name is not the bridge's is refused in plaintext; over TLS the certificate decides")
    func rebinding() {
        #expect(refusal("http://evil.example:9099", host: "evil.example:9099") == .foreignHost)
        #expect(refusal("http://localhost.evil.example:9099", host: "localhost.evil.example:9099") == .foreignHost)
        #expect(refusal("http://127.0.0.1.nip.io:9099", host: "127.0.0.1.nip.io:9099") == .foreignHost)
        #expect(refusal("https://desk.lan:9099", host: "desk.lan:9099", tls: true) == nil)
    }

    @Test("safe methods")
    func safeMethods() {
        #expect(NetworkPolicy.isSafeMethod("GET") && NetworkPolicy.isSafeMethod("head") && NetworkPolicy.isSafeMethod("OPTIONS"))
        #expect(!NetworkPolicy.isSafeMethod("POST") && !NetworkPolicy.isSafeMethod("DELETE") && !NetworkPolicy.isSafeMethod("PUT"))
    }
}
