import BridgeTLS
import Foundation
import Testing

@Suite("BridgeIdentity", .tags(.externalTool))
struct BridgeIdentityTests {
    let names = BridgeIdentityNames(hostName: "desk", addresses: ["192.168.1.20", "fe80::1%eth0", "fd00::7"], tailscaleName: "desk.tail1234.ts.net.")

    @Test("First use makes an identity; a reload gives the same pin and the same certificate")
    func reloadKeepsPin() throws {
        let directory = try TemporaryDirectory()
        let first = try BridgeIdentity.loadOrCreate(in: directory.url, names: names)
        let second = try BridgeIdentity.loadOrCreate(in: directory.url, names: names)
        #expect(first.origin == .created)
        #expect(second.origin == .loaded)
        #expect(first.pin == second.pin)
        #expect(first.certificateDER == second.certificateDER)
        #expect(try BridgeIdentity.storedPin(in: directory.url) == first.pin)
    }

    @Test("The certificate names the host, host.local, the Tailscale name and the addresses")
    func carriesNames() throws {
        let directory = try TemporaryDirectory()
        let identity = try BridgeIdentity.loadOrCreate(in: directory.url, names: names)
        #expect(identity.dnsNames == ["desk", "desk.local", "desk.tail1234.ts.net", "localhost"])
        let text = try OpenSSL.run(["x509", "-noout", "-ext", "subjectAltName", "-in",
                                    directory.url.appendingPathComponent(BridgeIdentity.certificateFileName).path])
        #expect(text.contains("IP Address:192.168.1.20"))
        #expect(text.contains("IP Address:FD00:0:0:0:0:0:0:7") || text.contains("IP Address:fd00::7"))
        #expect(!text.lowercased().contains("fe80"))
        #expect(text.contains("DNS:desk.local"))
    }

    @Test("Rotate makes a new key: the pin changes, and the next load keeps the new one")
    func rotateChangesPin() throws {
        let directory = try TemporaryDirectory()
        let before = try BridgeIdentity.loadOrCreate(in: directory.url, names: names)
        let rotated = try BridgeIdentity.rotate(in: directory.url, names: names)
        let after = try BridgeIdentity.loadOrCreate(in: directory.url, names: names)
        #expect(rotated.pin != before.pin)
        #expect(after.pin == rotated.pin)
        #expect(after.origin == .loaded)
    }

    @Test("New names or a near expiry re-issue the certificate with the same key: same pin")
    func reissueKeepsPin() throws {
        let directory = try TemporaryDirectory()
        let now = Date()
        let first = try BridgeIdentity.loadOrCreate(in: directory.url, names: names, now: now)
        let moved = try BridgeIdentity.loadOrCreate(
            in: directory.url, names: BridgeIdentityNames(hostName: "desk", addresses: ["10.0.0.9"]), now: now)
        #expect(moved.origin == .reissued)
        #expect(moved.pin == first.pin)
        #expect(moved.certificateDER != first.certificateDER)
        let later = try BridgeIdentity.loadOrCreate(
            in: directory.url, names: BridgeIdentityNames(hostName: "desk", addresses: ["10.0.0.9"]),
            now: now.addingTimeInterval(340 * 24 * 3600))
        #expect(later.origin == .reissued)
        #expect(later.pin == first.pin)
        #expect(later.notValidAfter > moved.notValidAfter)
    }

    @Test("The key file has mode 0600 and the directory 0700, whatever the umask")
    func keyIsPrivate() throws {
        let directory = try TemporaryDirectory()
        let state = directory.url.appendingPathComponent("state")
        let previous = umask(0)
        defer { umask(previous) }
        _ = try BridgeIdentity.loadOrCreate(in: state, names: names)
        let key = state.appendingPathComponent(BridgeIdentity.keyFileName).path
        #expect(try mode(of: key) == 0o600)
        #expect(try mode(of: state.path) == 0o700)
        _ = try BridgeIdentity.rotate(in: state, names: names)
        #expect(try mode(of: key) == 0o600)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: state.path).filter { $0.contains(".tmp") }
        #expect(leftovers.isEmpty)
    }

    @Test("A damaged key is an error that says how to recover, not a silent new identity")
    func damagedKey() throws {
        let directory = try TemporaryDirectory()
        _ = try BridgeIdentity.loadOrCreate(in: directory.url, names: names)
        let key = directory.url.appendingPathComponent(BridgeIdentity.keyFileName)
        try Data("not a key".utf8).write(to: key)
        #expect(throws: BridgeIdentityError.self) { try BridgeIdentity.loadOrCreate(in: directory.url, names: names) }
        do {
            _ = try BridgeIdentity.loadOrCreate(in: directory.url, names: names)
        } catch {
            guard case .unreadableKey = error else {
                Issue.record("expected unreadableKey, got \(error)")
                return
            }
            #expect(error.description.contains("identity rotate"))
        }
    }

    @Test("A certificate that is not the key's (a crash between the two writes) is re-issued from the key")
    func mismatchedCertificate() throws {
        let one = try TemporaryDirectory()
        let other = try TemporaryDirectory()
        let first = try BridgeIdentity.loadOrCreate(in: one.url, names: names)
        let stranger = try BridgeIdentity.loadOrCreate(in: other.url, names: names)
        try Data(stranger.certificatePEM.utf8).write(to: one.url.appendingPathComponent(BridgeIdentity.certificateFileName))
        let reloaded = try BridgeIdentity.loadOrCreate(in: one.url, names: names)
        #expect(reloaded.origin == .reissued)
        #expect(reloaded.pin == first.pin)
        #expect(try OpenSSL.pin(ofCertificateAt: one.url.appendingPathComponent(BridgeIdentity.certificateFileName).path)
            == first.pin.base64)
    }

    private func mode(of path: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return (attributes[.posixPermissions] as? Int) ?? -1
    }
}

/// A value holding the identity is printed by ServiceLifecycle's debug log (`sl-service=…`): the key must not be in it.
@Suite(.tags(.unit))
struct BridgeIdentityPrintingTests {
    struct Holder {
        let identity: BridgeIdentity
        let port: Int
    }

    @Test func printingTheIdentityOrAValueHoldingItNeverShowsTheKey() throws {
        let directory = try TemporaryDirectory()
        let identity = try BridgeIdentity.loadOrCreate(in: directory.url, names: BridgeIdentityNames(hostName: "desk"))
        let body = identity.privateKeyPEM.split(separator: "\n").dropFirst().first.map(String.init) ?? "?"
        for text in [String(describing: identity), String(reflecting: identity), "\(identity)",
                     String(describing: Holder(identity: identity, port: 1)), String(describing: [identity])] {
            #expect(!text.contains("PRIVATE KEY") && !text.contains(body), "\(text.prefix(200))")
            #expect(text.contains(identity.pin.description))
        }
    }
}
