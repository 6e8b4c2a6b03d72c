import BridgeRPC
import BridgeTLS
import Foundation
import Testing
@testable import BridgeClient

@Suite("Saved bridges: found by name, address or identity; recovery decisions", .tags(.unit))
struct SavedBridgesTests {
    static func store() throws -> SavedBridges {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("oa-saved-\(UUID().uuidString)")
        return SavedBridges(directory: directory)
    }

    static var pinA: CertificatePin {
        get throws { try CertificatePin(parsing: "sha256/" + Data(repeating: 1, count: 32).base64EncodedString()) }
    }
    static var pinB: CertificatePin {
        get throws { try CertificatePin(parsing: "sha256/" + Data(repeating: 2, count: 32).base64EncodedString()) }
    }

    @Test("plain connect finds the last bridge; a name in any case; an address it answered on, with or without scheme")
    func find() throws {
        let saved = try SavedBridgesTests.store()
        #expect(saved.last == nil && saved.find(target: nil) == nil)
        try saved.remember(name: "Desk", pin: SavedBridgesTests.pinA, address: "wss://192.168.1.20:9099/", tailscale: ["desk.ts.net"],
                           now: Date(timeIntervalSince1970: 1))
        try saved.remember(name: "Laptop", pin: SavedBridgesTests.pinB, address: "wss://[fe80::2%25eth0]:9099/", tailscale: [],
                           now: Date(timeIntervalSince1970: 2))
        #expect(saved.find(target: nil)?.name == "Laptop")
        #expect(try saved.find(target: "desk")?.pin == SavedBridgesTests.pinA.description)
        #expect(saved.find(target: "192.168.1.20:9099")?.name == "Desk")
        #expect(saved.find(target: "192.168.1.20")?.name == "Desk")  // the default port
        #expect(saved.find(target: "[fe80::2%eth0]:9099")?.name == "Laptop")
        #expect(saved.find(target: "192.168.1.21:9099") == nil)
        #expect(try saved.find(pin: SavedBridgesTests.pinA)?.tailscale == ["desk.ts.net"])
        // Used again: it is the last one now, and the new address comes first.
        try saved.remember(name: "Desk", pin: SavedBridgesTests.pinA, address: "wss://10.0.0.5:9099/", tailscale: [])
        #expect(saved.last?.name == "Desk")
        #expect(saved.last?.addresses == ["wss://10.0.0.5:9099/", "wss://192.168.1.20:9099/"])
        #expect(saved.all.count == 2)
    }

    @Test("one identity however it was named: a bridge saved by name gets its pin; the credentials file stays")
    func identity() throws {
        let saved = try SavedBridgesTests.store()
        let first = try saved.remember(name: "Desk", pin: nil, address: "ws://127.0.0.1:9099/", tailscale: [], credentials: "Desk.json")
        #expect(first.id == "Desk")
        let second = try saved.remember(name: "Desk", pin: SavedBridgesTests.pinA, address: "wss://127.0.0.1:9099/", tailscale: [])
        #expect(try second.id == SavedBridgesTests.pinA.description && second.credentials == "Desk.json")
        #expect(saved.all.count == 1)
        #expect(saved.credentialsFile(for: second).lastPathComponent == "Desk.json")
        #expect(try !SavedBridges.credentialsName(id: SavedBridgesTests.pinA.description).contains("/"))
    }

    @Test("a corrupt bridges.json is an error to load, and is not overwritten by a lookup")
    func corrupt() throws {
        let saved = try SavedBridgesTests.store()
        try FileManager.default.createDirectory(at: saved.directory, withIntermediateDirectories: true)
        let file = saved.directory.appendingPathComponent("bridges.json")
        try Data("not json".utf8).write(to: file)
        #expect(throws: (any Error).self) { try saved.load() }
        #expect(saved.find(target: nil) == nil)
        #expect(throws: (any Error).self) { try saved.remember(name: "Desk", pin: nil, address: nil, tailscale: []) }
        #expect(try String(contentsOf: file, encoding: .utf8) == "not json")
    }

    @Test("after a reconnect: an unknown session or one dropped while idle is gone; a gap in a known one is not")
    func sessionGone() {
        #expect(BridgeClientSession.isSessionGone(JSONRPCError(code: -32002, message: "Unknown session s1", data: ["sessionId": "s1"])))
        #expect(BridgeClientSession.isSessionGone(JSONRPCError(code: -32006, message: "dropped while idle")))
        #expect(!BridgeClientSession.isSessionGone(JSONRPCError(code: -32002, message: "gap", data: ["oldestSeq": 40])))
        #expect(!BridgeClientSession.isSessionGone(JSONRPCError(code: -32603, message: "internal")))
    }

    @Test("what is retried: a lost link or an absent bridge; never an answer, a refusal or a replaced session")
    func transient() {
        #expect(BridgeClientError.connectionClosed("x").isTransient)
        #expect(BridgeClientError.noEndpointReachable(["a"]).isTransient)
        #expect(!BridgeClientError.rpc(JSONRPCError(code: -32002, message: "Unknown session")).isTransient)
        #expect(!BridgeClientError.needsPairing(address: "a", detail: "HTTP 401").isTransient)
        #expect(!BridgeClientError.sessionReplaced(old: "a", new: "b", reason: "r").isTransient)
        #expect(!BridgeClientError.noEndpointReachable(["a: x", "b: y"]).summary.contains("\n"))
        #expect(!BridgeClientError.tokenExpired("HTTP 403 token_expired").isTransient)
        // What to run: the command line adds the flags (FlagAdvice); the library names the desktop's command only.
        let needsPairing = BridgeClientError.needsPairing(address: "ws://h:9099/", detail: "HTTP 401").description
        #expect(needsPairing.contains("'oa-bridge pair'") && !needsPairing.contains("--"))
    }

    @Test("with a pin each address is dialled once, over wss://")
    func distinctCandidates() throws {
        let candidates = [
            try BridgeEndpoint.manual("127.0.0.1:9099"), try BridgeEndpoint.manual("wss://127.0.0.1:9099"),
            try BridgeEndpoint.manual("[::1]:9099"),
        ]
        let dialled = try BridgeConnection.distinct(candidates, pin: SavedBridgesTests.pinA)
        #expect(dialled.map(\.url) == ["wss://127.0.0.1:9099/", "wss://[::1]:9099/"])
        #expect(BridgeConnection.distinct(candidates, pin: nil).count == 3)
    }
}
