import BridgeDPoP
import Crypto
import Foundation
import JWTKit
import Testing

/// A fixed instant the proofs below are made at.
private let now = Date(timeIntervalSince1970: 1_790_000_000)
private let url = "https://desk.local:9099/api/auth/refresh"

private func verifier(nonces: DPoPNonceSource? = nil) -> DPoPVerifier {
    DPoPVerifier(nonces: nonces, maxAge: .seconds(120), allowedSkew: .seconds(60))
}

@Suite("DPoP proofs: what the bridge takes and what it refuses (RFC 9449 §4.3)", .tags(.unit))
struct DPoPVerifierTests {
    let device = DPoPSigner()

    @Test("a proof made by the device passes both steps, and its thumbprint is the device key's")
    func roundTrip() async throws {
        let proof = try await device.proof(method: "POST", uri: url, now: now)
        let checked = try await verifier().check(proof, for: DPoPRequest(method: "POST", uri: url), now: now)
        #expect(checked.thumbprint == device.publicKey.thumbprint)
        #expect(checked.thumbprint.count == 43)
        try verifier().accept(checked, boundTo: device.publicKey.thumbprint, now: now)
    }

    @Test("RFC 9449's own example proof (§4.1) verifies, and its key's thumbprint is the one §6.1 gives")
    func rfcExample() async throws {
        let proof = "eyJ0eXAiOiJkcG9wK2p3dCIsImFsZyI6IkVTMjU2IiwiandrIjp7Imt0eSI6IkVDIiwieCI6Imw4dEZyaHgtMzR0VjNoUklDUkRZOXpDa0RscEJoRjQyVVFVZldWQVdCRnMiLCJ5IjoiOVZFNGpmX09rX282NHpiVFRsY3VOSmFqSG10NnY5VERWclUwQ2R2R1JEQSIsImNydiI6IlAtMjU2In19.eyJqdGkiOiItQndDM0VTYzZhY2MybFRjIiwiaHRtIjoiUE9TVCIsImh0dSI6Imh0dHBzOi8vc2VydmVyLmV4YW1wbGUuY29tL3Rva2VuIiwiaWF0IjoxNTYyMjYyNjE2fQ.2-GxA6T8lP4vfrg8v-FdWP0A0zdrj8igiMLvqRMUvwnQg4PtFLbdLXiOSsX0x7NVY-FNyJK70nfbV37xRZT3Lg"
        let issued = Date(timeIntervalSince1970: 1_562_262_616)
        let checked = try await verifier().check(
            proof, for: DPoPRequest(method: "POST", uri: "https://server.example.com/token"), now: issued)
        #expect(checked.thumbprint == "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I")
        #expect(checked.claims.jti == "-BwC3ESc6acc2lTc")
    }

    @Test("a proof from another key is refused at the binding: keyMismatch")
    func otherKey() async throws {
        let thief = DPoPSigner()
        let proof = try await thief.proof(method: "POST", uri: url, now: now)
        let checked = try await verifier().check(proof, for: DPoPRequest(method: "POST", uri: url), now: now)
        #expect(throws: DPoPError.keyMismatch) {
            try verifier().accept(checked, boundTo: device.publicKey.thumbprint, now: now)
        }
    }

    @Test("the same proof twice (same jti) is refused the second time: replayed")
    func replay() async throws {
        let v = verifier()
        let proof = try await device.proof(method: "POST", uri: url, now: now)
        let first = try await v.check(proof, for: DPoPRequest(method: "POST", uri: url), now: now)
        try v.accept(first, boundTo: device.publicKey.thumbprint, now: now)
        let second = try await v.check(proof, for: DPoPRequest(method: "POST", uri: url), now: now.addingTimeInterval(5))
        #expect(throws: DPoPError.replayed) {
            try v.accept(second, boundTo: device.publicKey.thumbprint, now: now.addingTimeInterval(5))
        }
    }

    @Test("a proof for another method or another URL is refused")
    func wrongTarget() async throws {
        let proof = try await device.proof(method: "POST", uri: url, now: now)
        await #expect(throws: DPoPError.wrongMethod(expected: "GET", proof: "POST")) {
            try await verifier().check(proof, for: DPoPRequest(method: "GET", uri: url), now: now)
        }
        await #expect(throws: DPoPError.self) {
            try await verifier().check(
                proof, for: DPoPRequest(method: "POST", uri: "https://desk.local:9099/api/auth/exchange"), now: now)
        }
        await #expect(throws: DPoPError.self) {
            try await verifier().check(
                proof, for: DPoPRequest(method: "POST", uri: "https://evil.example:9099/api/auth/refresh"), now: now)
        }
    }

    @Test("htu is compared after RFC 3986 normalisation: case, default port, dot segments, ws/wss; query ignored")
    func normalisation() async throws {
        let proof = try await device.proof(method: "GET", uri: "wss://Desk.Local:443/a/./b/../acp?token=x", now: now)
        _ = try await verifier().check(proof, for: DPoPRequest(method: "GET", uri: "https://desk.local/a/acp"), now: now)
        #expect(DPoPTargetURI("HTTP://[FE80::1]:80/%7Euser/%2f")?.normalized == "http://[fe80::1]/~user/%2F")
        #expect(DPoPTargetURI("ftp://desk/") == nil)
        #expect(DPoPTargetURI("/relative") == nil)
    }

    @Test("an old iat is refused (stale), one from far ahead too; within the skew it passes")
    func age() async throws {
        let old = try await device.proof(method: "POST", uri: url, now: now.addingTimeInterval(-121))
        await #expect(throws: DPoPError.self) {
            try await verifier().check(old, for: DPoPRequest(method: "POST", uri: url), now: now)
        }
        let ahead = try await device.proof(method: "POST", uri: url, now: now.addingTimeInterval(61))
        await #expect(throws: DPoPError.self) {
            try await verifier().check(ahead, for: DPoPRequest(method: "POST", uri: url), now: now)
        }
        let slightlyAhead = try await device.proof(method: "POST", uri: url, now: now.addingTimeInterval(30))
        _ = try await verifier().check(slightlyAhead, for: DPoPRequest(method: "POST", uri: url), now: now)
    }

    @Test("with an access token the proof must carry its ath; a missing or wrong one is refused")
    func accessTokenHash() async throws {
        let request = DPoPRequest(method: "GET", uri: url, accessToken: "access-1")
        let right = try await device.proof(method: "GET", uri: url, accessToken: "access-1", now: now)
        _ = try await verifier().check(right, for: request, now: now)
        let none = try await device.proof(method: "GET", uri: url, now: now)
        await #expect(throws: DPoPError.accessTokenHashMismatch) {
            try await verifier().check(none, for: request, now: now)
        }
        let other = try await device.proof(method: "GET", uri: url, accessToken: "access-2", now: now)
        await #expect(throws: DPoPError.accessTokenHashMismatch) {
            try await verifier().check(other, for: request, now: now)
        }
    }

    @Test("nonces: none or a stale one gets use_dpop_nonce with a fresh nonce; the current and previous pass")
    func nonces() async throws {
        let source = DPoPNonceSource(lifetime: .seconds(300))
        let v = verifier(nonces: source)
        let request = DPoPRequest(method: "POST", uri: url)
        let bare = try await device.proof(method: "POST", uri: url, now: now)
        do {
            _ = try await v.check(bare, for: request, now: now)
            Issue.record("a proof without a nonce passed")
        } catch {
            #expect(error.code == "use_dpop_nonce")
            #expect(error.freshNonce == source.current(at: now))
        }
        let current = try await device.proof(method: "POST", uri: url, nonce: source.current(at: now), now: now)
        _ = try await v.check(current, for: request, now: now)
        // the previous period's nonce still passes; two periods back does not
        let previousNonce = source.current(at: now.addingTimeInterval(-300))
        let previous = try await device.proof(method: "POST", uri: url, nonce: previousNonce, now: now)
        _ = try await v.check(previous, for: request, now: now)
        let staleNonce = source.current(at: now.addingTimeInterval(-600))
        let stale = try await device.proof(method: "POST", uri: url, nonce: staleNonce, now: now)
        await #expect(throws: DPoPError.nonceRequired(source.current(at: now))) {
            try await v.check(stale, for: request, now: now)
        }
        // another bridge's nonces (another key) are not this one's
        let foreign = DPoPNonceSource(lifetime: .seconds(300)).current(at: now)
        #expect(!source.isValid(foreign, at: now))
    }

    @Test("forgeries: a changed claim breaks the signature; alg none, HS256, a private jwk, typ JWT are refused")
    func forgeries() async throws {
        let proof = try await device.proof(method: "POST", uri: url, now: now)
        let parts = proof.split(separator: ".").map(String.init)
        let forgedClaims = DPoPProofClaims(htm: "POST", htu: url, iat: Int64(now.timeIntervalSince1970), jti: "forged")
        let forgedPayload = try JSONEncoder().encode(forgedClaims).base64URL
        await #expect(throws: DPoPError.badSignature) {
            try await verifier().check("\(parts[0]).\(forgedPayload).\(parts[2])", for: DPoPRequest(method: "POST", uri: url), now: now)
        }
        for header in [
            #"{"typ":"dpop+jwt","alg":"none","jwk":{"kty":"EC","crv":"P-256","x":"a","y":"b"}}"#,
            #"{"typ":"dpop+jwt","alg":"HS256","jwk":{"kty":"oct","k":"c2VjcmV0"}}"#,
            #"{"typ":"JWT","alg":"ES256","jwk":{"kty":"EC","crv":"P-256","x":"a","y":"b"}}"#,
        ] {
            let token = "\(Data(header.utf8).base64URL).\(parts[1]).\(parts[2])"
            await #expect(throws: DPoPError.self) {
                try await verifier().check(token, for: DPoPRequest(method: "POST", uri: url), now: now)
            }
        }
        var jwk: [String: JWTHeaderField] = [:]
        if case .object(let fields) = device.publicKey.jwk { jwk = fields }
        jwk["d"] = .string(Data(device.privateKey.rawRepresentation).base64URL)
        #expect(throws: DPoPError.self) { try DPoPPublicKey(jwk: jwk) }
        await #expect(throws: DPoPError.missingProof) {
            try await verifier().check("", for: DPoPRequest(method: "POST", uri: url), now: now)
        }
        await #expect(throws: DPoPError.self) {
            try await verifier().check(String(repeating: "a", count: 9_000), for: DPoPRequest(method: "POST", uri: url), now: now)
        }
    }

    @Test("the replay cache is bounded per key, and entries age out after the retention")
    func replayCacheBounds() throws {
        let cache = DPoPReplayCache(retention: .seconds(180), perKey: 3, keys: 2)
        for n in 0..<3 { try cache.record(jti: "j\(n)", thumbprint: "k1", issuedAt: now, now: now) }
        #expect(throws: DPoPError.tooManyProofs) { try cache.record(jti: "j3", thumbprint: "k1", issuedAt: now, now: now) }
        try cache.record(jti: "j0", thumbprint: "k2", issuedAt: now, now: now)  // another key has its own room
        #expect(throws: DPoPError.tooManyProofs) { try cache.record(jti: "x", thumbprint: "k3", issuedAt: now, now: now) }
        let later = now.addingTimeInterval(181)
        try cache.record(jti: "j3", thumbprint: "k1", issuedAt: later, now: later)
        try cache.record(jti: "j0", thumbprint: "k1", issuedAt: later, now: later)  // expired entries no longer count
        try cache.record(jti: "x", thumbprint: "k3", issuedAt: later, now: later)
        #expect(cache.count <= 5)
    }

    @Test("no error message carries the token, the proof or key material")
    func messages() async throws {
        let errors: [DPoPError] = [.missingProof, .badSignature, .replayed, .keyMismatch, .accessTokenHashMismatch,
                                   .nonceRequired("n"), .tooManyProofs, .stale(age: .seconds(500))]
        for error in errors {
            #expect(!error.message.isEmpty)
            #expect(!error.message.contains("access-1"))
        }
        #expect(DPoPError.nonceRequired("n").code == "use_dpop_nonce")
        #expect(DPoPError.replayed.code == "invalid_dpop_proof")
    }
}

extension Data {
    fileprivate var base64URL: String {
        base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
