import BridgeDPoP
import BridgePairing
import BridgePairingWire
import Foundation
import Testing

/// Issue 30: reuse detection comes before the DPoP binding check, so a bound family's rotated refresh token presented
/// again (copied by a thief, who has no key) revokes the family whatever proof comes with it.
extension DPoPAuthenticatorTests {
    /// A bound device that refreshed once: its first (rotated) refresh token and its current session.
    func pairedAndRotated(_ auth: Authenticator, _ store: TokenStore, nonce: String) async throws -> (old: String, current: DeviceSession) {
        let first = try await pair(auth, store, dpop: try await presentation("POST", "/api/auth/exchange", nonce: nonce))
        let current = try await auth.refresh(
            RefreshRequest(refreshToken: first.refreshToken.token), address: "10.0.0.7",
            dpop: try await presentation("POST", "/api/auth/refresh", nonce: nonce))
        return (first.refreshToken.token, current)
    }

    /// The device's current tokens no longer work: its refresh token (with its own key's proof) and its access token.
    func expectFamilyRevoked(_ auth: Authenticator, _ current: DeviceSession, nonce: String) async throws {
        let refresh = await pairingError {
            try await auth.refresh(RefreshRequest(refreshToken: current.refreshToken.token), address: "10.0.0.7",
                                   dpop: try await presentation("POST", "/api/auth/refresh", nonce: nonce))
        }
        #expect(refresh == .revokedToken(.refresh))
        let access = current.accessToken.token
        let use = await pairingError {
            try await auth.authenticate(
                authorization: "DPoP \(access)", address: "10.0.0.7",
                dpop: try await presentation("GET", "/api/status", token: access, nonce: nonce))
        }
        #expect(use == .revokedToken(.access))
    }

    @Test("a bound family's rotated refresh token sent again without a proof revokes the family")
    func reuseWithoutAProofRevokes() async throws {
        defer { temporary.cleanUp() }
        let (store, auth, policy) = try make(.optional)
        let nonce = try #require(policy.currentNonce())
        let (old, current) = try await pairedAndRotated(auth, store, nonce: nonce)
        let thief = await pairingError { try await auth.refresh(RefreshRequest(refreshToken: old), address: "10.0.0.9") }
        #expect(thief == .refreshTokenReused)
        try await expectFamilyRevoked(auth, current, nonce: nonce)
    }

    @Test("a rotated refresh token sent again with another key's proof, or a proof that fails its own checks, revokes the family")
    func reuseWithABadProofRevokes() async throws {
        defer { temporary.cleanUp() }
        let (store, auth, policy) = try make(.optional)
        let nonce = try #require(policy.currentNonce())

        let (old, current) = try await pairedAndRotated(auth, store, nonce: nonce)
        let otherKey = await pairingError {
            try await auth.refresh(RefreshRequest(refreshToken: old), address: "10.0.0.9",
                                   dpop: try await presentation("POST", "/api/auth/refresh", signer: DPoPSigner(), nonce: nonce))
        }
        #expect(otherKey == .refreshTokenReused)
        try await expectFamilyRevoked(auth, current, nonce: nonce)

        // A proof refused before the store is asked (here: for another URL) does not hide the reuse either.
        let (old2, current2) = try await pairedAndRotated(auth, store, nonce: nonce)
        let badProof = await pairingError {
            try await auth.refresh(RefreshRequest(refreshToken: old2), address: "10.0.0.9",
                                   dpop: try await presentation("POST", "/api/auth/refresh", nonce: nonce, htu: Self.base + "/elsewhere"))
        }
        #expect(badProof == .refreshTokenReused)
        try await expectFamilyRevoked(auth, current2, nonce: nonce)
    }

    @Test("under --dpop required a rotated refresh token sent again without a proof revokes the family; a current one sent so changes nothing")
    func reuseUnderRequired() async throws {
        defer { temporary.cleanUp() }
        let (store, auth, policy) = try make(.required)
        let nonce = try #require(policy.currentNonce())
        let (old, current) = try await pairedAndRotated(auth, store, nonce: nonce)
        // The current token without a proof is refused and spends nothing.
        let notReuse = await pairingError {
            try await auth.refresh(RefreshRequest(refreshToken: current.refreshToken.token), address: "10.0.0.9")
        }
        #expect(notReuse == .dpop(.proofRequired))
        let thief = await pairingError { try await auth.refresh(RefreshRequest(refreshToken: old), address: "10.0.0.9") }
        #expect(thief == .refreshTokenReused)
        try await expectFamilyRevoked(auth, current, nonce: nonce)
    }
}
