@testable import BridgeClient
import BridgeDPoP
import Foundation
import Testing

@Suite("DPoP on the client: the key file and the proofs it makes", .tags(.unit))
struct DPoPClientTests {
    static func directory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("oa-dpop-client-\(UUID().uuidString)")
    }

    static func mode(_ url: URL) throws -> Int {
        try #require((FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions] as? NSNumber)?.intValue)
    }

    @Test("the key is made in dpop/ with mode 0600 (directory 0700), read back as the same key; a new pairing replaces it")
    func keyFile() throws {
        let base = DPoPClientTests.directory()
        defer { try? FileManager.default.removeItem(at: base) }
        let file = DPoPClientKey.directory(beside: base).appendingPathComponent(
            DPoPClientKey.fileName(pinDigest: Array(repeating: 0xab, count: 32), fallback: "Desk"))
        #expect(file.lastPathComponent == "pin-abababababababab.key")
        let made = try DPoPClientKey.create(at: file)
        #expect(try DPoPClientTests.mode(file) == 0o600)
        #expect(try DPoPClientTests.mode(file.deletingLastPathComponent()) == 0o700)
        let read = try DPoPClientKey.load(from: file)
        #expect(read.publicKey.thumbprint == made.publicKey.thumbprint)
        let again = try DPoPClientKey.create(at: file)
        #expect(again.publicKey.thumbprint != made.publicKey.thumbprint)
        #expect(try DPoPClientKey.load(from: file).publicKey.thumbprint == again.publicKey.thumbprint)
        // No temporary file is left beside it.
        #expect(try FileManager.default.contentsOfDirectory(atPath: file.deletingLastPathComponent().path) == [file.lastPathComponent])
        // A pairing's key written apart takes the old one's place in one step.
        let pending = file.deletingLastPathComponent().appendingPathComponent(".pending.key")
        let next = try DPoPClientKey.create(at: pending)
        try DPoPClientKey.move(pending, to: file)
        #expect(try DPoPClientKey.load(from: file).publicKey.thumbprint == next.publicKey.thumbprint)
        #expect(try FileManager.default.contentsOfDirectory(atPath: file.deletingLastPathComponent().path) == [file.lastPathComponent])
    }

    @Test("a missing, unreadable or group/world-readable key file is refused with an error saying what to do")
    func badKeyFiles() throws {
        let base = DPoPClientTests.directory()
        defer { try? FileManager.default.removeItem(at: base) }
        let file = base.appendingPathComponent("dpop/Desk.key")
        #expect(throws: DPoPClientKeyError.missing(path: file.path)) { try DPoPClientKey.load(from: file) }
        _ = try DPoPClientKey.create(at: file)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: file.path)
        #expect(throws: DPoPClientKeyError.tooOpen(path: file.path, mode: 0o644)) { try DPoPClientKey.load(from: file) }
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file.path)
        try Data("not a key".utf8).write(to: file)
        do {
            _ = try DPoPClientKey.load(from: file)
            Issue.record("a file without a key was read")
        } catch {
            guard case .unreadable = error else { Issue.record("\(error)"); return }
            #expect(error.description.contains("pair again"))
        }
        #expect(DPoPClientKeyError.missing(path: "/x").description.contains("oa-bridge connect --pair"))
    }

    @Test("an upgrade's proof names https://host:port/path without the query, carries ath and the nonce, and verifies")
    func upgradeProofVerifies() async throws {
        let binding = DPoPClientBinding(signer: DPoPSigner())
        let target = try WebSocketConnector.Target(url: "wss://127.0.0.1:9099/acp?x=1")
        let uri = DPoPClientBinding.uri(of: target)
        #expect(uri == "https://127.0.0.1:9099/acp")
        #expect(DPoPClientBinding.uri(of: try WebSocketConnector.Target(url: "ws://[fe80::1%25eth0]:9099/")) == "http://[fe80::1%25eth0]:9099/")
        let nonces = DPoPNonceSource()
        let now = Date()
        binding.noteNonce(nonces.current(at: now))
        let proof = try await binding.proof(method: "GET", url: uri, accessToken: "oa_s_token")
        let verifier = DPoPVerifier(nonces: nonces)
        let checked = try await verifier.check(
            proof, for: DPoPRequest(method: "GET", uri: "https://127.0.0.1:9099/acp", accessToken: "oa_s_token"), now: now)
        #expect(checked.thumbprint == binding.signer.publicKey.thumbprint)
        #expect(checked.claims.htu == "https://127.0.0.1:9099/acp")
        // Another token's ath does not match.
        await #expect(throws: DPoPError.accessTokenHashMismatch) {
            _ = try await verifier.check(
                try await binding.proof(method: "GET", url: uri, accessToken: "oa_s_token"),
                for: DPoPRequest(method: "GET", uri: "https://127.0.0.1:9099/acp", accessToken: "oa_s_other"), now: now)
        }
        #expect(DPoPClientBinding.httpURI("wss://h:1/a") == "https://h:1/a")
        #expect(DPoPClientBinding.httpURI("ws://h:1/a") == "http://h:1/a")
    }

    @Test("the access tokens a vault registered are found, replaced at a refresh and forgotten; the registry is bounded")
    func registry() {
        let binding = DPoPClientBinding(signer: DPoPSigner())
        let first = "oa_s_" + UUID().uuidString
        let second = "oa_s_" + UUID().uuidString
        DPoPClientBinding.register(binding, accessToken: first)
        #expect(DPoPClientBinding.binding(for: first) === binding)
        DPoPClientBinding.register(binding, accessToken: second, replacing: first)
        #expect(DPoPClientBinding.binding(for: first) == nil)
        #expect(DPoPClientBinding.binding(for: second) === binding)
        DPoPClientBinding.unregister(accessToken: second)
        #expect(DPoPClientBinding.binding(for: second) == nil)
        let many = (0..<(DPoPClientBinding.registryLimit + 10)).map { "oa_s_many_\($0)_\(UUID().uuidString)" }
        for token in many { DPoPClientBinding.register(binding, accessToken: token) }
        #expect(many.filter { DPoPClientBinding.binding(for: $0) != nil }.count <= DPoPClientBinding.registryLimit)
        for token in many { DPoPClientBinding.unregister(accessToken: token) }
    }

    @Test("an answer asks for the nonce: 400 use_dpop_nonce (exchange, refresh) or 401 WWW-Authenticate, with DPoP-Nonce")
    func wantsNonce() {
        let body = Array(#"{"error":"use_dpop_nonce","error_description":"x"}"#.utf8)
        #expect(DPoPClientBinding.wantsNonce(.init(status: 400, body: body, headers: ["dpop-nonce": "n"])))
        #expect(!DPoPClientBinding.wantsNonce(.init(status: 400, body: body, headers: [:])))
        #expect(DPoPClientBinding.wantsNonce(.init(status: 401, body: [], headers: [
            "dpop-nonce": "n", "www-authenticate": #"DPoP error="use_dpop_nonce", error_description="x""#])))
        #expect(!DPoPClientBinding.wantsNonce(.init(status: 401, body: Array(#"{"error":"invalid_dpop_proof"}"#.utf8), headers: [
            "dpop-nonce": "n", "www-authenticate": #"DPoP error="invalid_dpop_proof""#])))
        #expect(!DPoPClientBinding.wantsNonce(.init(status: 200, body: [], headers: ["dpop-nonce": "n"])))
    }
}
