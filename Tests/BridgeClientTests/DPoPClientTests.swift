import BridgeDPoP
import BridgeTestKit
import Foundation
import Testing
@testable import BridgeClient

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
            guard case .unreadable = error else {
                Issue.record("\(error)")
                return
            }
            #expect(error.description.contains("pair again"))
        }
        #expect(DPoPClientKeyError.missing(path: "/x").description.contains("Pair again"))
        #expect(!DPoPClientKeyError.missing(path: "/x").description.contains("--"), "the command line names the flag (FlagAdvice)")
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

    @Test("a credential names its scheme: Bearer alone, DPoP with a key; it never prints its token")
    func credential() {
        let bearer = BridgeCredential.bearer("oa_s_secret")
        #expect(bearer.scheme == "Bearer" && bearer.authorization == "Bearer oa_s_secret" && bearer.proofKey == nil)
        let bound = BridgeCredential(accessToken: "oa_s_secret", proofKey: DPoPClientBinding(signer: DPoPSigner()))
        #expect(bound.scheme == "DPoP" && bound.authorization == "DPoP oa_s_secret")
        #expect(!"\(bound)".contains("oa_s_secret") && !"\(bearer)".contains("oa_s_secret"))
    }

    @Test("a clock 10 minutes behind is corrected by the bridge's Date, and its proofs then pass the bridge's iat check")
    func clockCorrected() async throws {
        let server = Date(timeIntervalSince1970: 1_795_000_000)
        let binding = DPoPClientBinding(signer: DPoPSigner(), clock: ManualBridgeClock(wallStart: server.addingTimeInterval(-600)))
        let nonces = DPoPNonceSource()
        binding.noteNonce(nonces.current(at: server))
        let request = DPoPRequest(method: "GET", uri: "https://h:1/", accessToken: "oa_s_token")
        // On its own clock the proof is 10 minutes old: refused.
        await #expect(throws: DPoPError.self) {
            _ = try await DPoPVerifier(nonces: nonces).check(
                try await binding.proof(method: "GET", url: "wss://h:1/", accessToken: "oa_s_token"), for: request, now: server)
        }
        let date = "Wed, 18 Nov 2026 11:06:40 GMT"
        #expect(DPoPClientBinding.httpDate(date) == server)
        #expect(binding.correctClock(byServerDate: date))
        #expect(binding.clockOffset == 600)
        // A second look at the same clock changes nothing (no second retry for it).
        #expect(!binding.correctClock(byServerDate: date))
        let checked = try await DPoPVerifier(nonces: nonces).check(
            try await binding.proof(method: "GET", url: "wss://h:1/", accessToken: "oa_s_token"), for: request, now: server)
        #expect(checked.claims.iat == Int64(server.timeIntervalSince1970))
        // Seconds apart (an HTTP date's rounding) or no date at all: nothing to correct.
        let close = DPoPClientBinding(signer: DPoPSigner(), clock: ManualBridgeClock(wallStart: server.addingTimeInterval(-2)))
        #expect(!close.correctClock(byServerDate: date) && close.clockOffset == 0)
        #expect(!close.correctClock(byServerDate: "yesterday") && !close.correctClock(byServerDate: nil))
    }

    @Test("the RFC 9449 error of an answer: WWW-Authenticate's error, else the JSON body's")
    func dpopError() {
        #expect(DPoPClientBinding.dpopError(.init(status: 401, body: [], headers: [
            "www-authenticate": #"DPoP error="invalid_dpop_proof", algs="ES256""#])) == "invalid_dpop_proof")
        #expect(DPoPClientBinding.dpopError(.init(status: 400, body: Array(#"{"error":"invalid_dpop_proof"}"#.utf8))) == "invalid_dpop_proof")
        #expect(DPoPClientBinding.dpopError(.init(status: 200, body: Array(#"{"error":"invalid_dpop_proof"}"#.utf8))) == nil)
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
