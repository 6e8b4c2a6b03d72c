import Foundation

/// Why a DPoP proof was refused, with the RFC 9449 error code a response carries and a message a user (or the
/// developer of a client) can act on.
///
/// Neither the token nor the proof is ever part of a message.
public enum DPoPError: Error, Sendable, Equatable {
    /// The request carries no `DPoP` proof although the token is bound to a key (or the bridge requires proofs).
    case missingProof
    /// The proof is not a compact JWS with the header and claims RFC 9449 §4.2 requires.
    case malformedProof(String)
    /// The proof is signed with an algorithm the bridge does not take (only ES256).
    case unsupportedAlgorithm(String)
    /// The signature does not verify with the key in the proof's `jwk` header.
    case badSignature
    /// `htm` names another method than the request's.
    case wrongMethod(expected: String, proof: String)
    /// `htu` names another URI than the request's (scheme, host, port and path compared after normalisation).
    case wrongURI(expected: String, proof: String)
    /// `iat` is older than the bridge accepts.
    case stale(age: Duration)
    /// `iat` is further in the future than the allowed clock skew.
    case issuedInTheFuture(ahead: Duration)
    /// A proof with this `jti` was already used.
    case replayed
    /// The proof's `ath` is missing or is not the SHA-256 of the access token presented with it.
    case accessTokenHashMismatch
    /// The proof is signed by another key than the one the token family is bound to.
    case keyMismatch
    /// The proof has no nonce, or an expired one: retry with the nonce in the `DPoP-Nonce` header.
    case nonceRequired(String)
    /// This key has used more proofs in the replay window than the bridge keeps: slow down.
    case tooManyProofs
    /// A token bound to a key was presented as `Authorization: Bearer`: present it as `Authorization: DPoP`.
    case boundTokenAsBearer
    /// The bridge requires DPoP (`--dpop required`) and this token family is not bound to a key (paired before DPoP).
    case unboundToken
    /// The bridge requires DPoP (`--dpop required`) and the pairing exchange or refresh carried no proof.
    case proofRequired

    /// The RFC 9449 §7.1/§8 error code: `use_dpop_nonce` for a missing or stale nonce, `invalid_dpop_proof` otherwise.
    public var code: String {
        switch self {
        case .nonceRequired: return "use_dpop_nonce"
        case .boundTokenAsBearer: return "invalid_token"
        default: return "invalid_dpop_proof"
        }
    }

    /// The nonce to send in `DPoP-Nonce` with the error, where there is one.
    public var freshNonce: String? {
        if case .nonceRequired(let nonce) = self { return nonce }
        return nil
    }

    /// What went wrong, in words; no token, proof or key material.
    public var message: String {
        switch self {
        case .missingProof: return "this token is bound to a key: send a DPoP proof with every request (RFC 9449)"
        case .malformedProof(let why): return "the DPoP proof is malformed: \(why)"
        case .unsupportedAlgorithm(let alg): return "the DPoP proof's alg \(alg) is not supported: sign with ES256"
        case .badSignature: return "the DPoP proof's signature does not verify with the key in its jwk header"
        case .wrongMethod(let expected, let proof):
            return "the DPoP proof is for method \(proof), the request is \(expected)"
        case .wrongURI(let expected, let proof): return "the DPoP proof is for \(proof), the request is for \(expected)"
        case .stale(let age): return "the DPoP proof was issued \(Int(age.components.seconds)) s ago: make a fresh one"
        case .issuedInTheFuture(let ahead):
            return "the DPoP proof is issued \(Int(ahead.components.seconds)) s in the future: check the device's clock"
        case .replayed: return "this DPoP proof was already used (same jti): make a fresh proof for each request"
        case .accessTokenHashMismatch: return "the DPoP proof's ath is missing or does not match the access token"
        case .keyMismatch: return "the DPoP proof is signed by another key than the one this token is bound to"
        case .nonceRequired: return "the DPoP proof needs the bridge's current nonce: retry with the DPoP-Nonce header's value"
        case .tooManyProofs: return "too many DPoP proofs from this key in a short time: slow down"
        case .boundTokenAsBearer:
            return "this token is bound to a key: send it as 'Authorization: DPoP <token>' with a DPoP proof, not as Bearer"
        case .unboundToken:
            return "this bridge requires device-bound tokens (DPoP) and this device was paired before: pair it again ('oa-bridge pair' on the desktop) with an app that supports DPoP"
        case .proofRequired:
            return "this bridge requires device-bound tokens (DPoP): send a DPoP proof with this request; update the app if it cannot"
        }
    }
}

extension DPoPError: CustomStringConvertible {
    /// The error's code as sent on the wire and its message, for example `invalid_dpop_proof: the proof is too old`.
    public var description: String { "\(code): \(message)" }
}
