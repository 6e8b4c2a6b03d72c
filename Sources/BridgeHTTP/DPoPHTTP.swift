import BridgeDPoP
public import BridgePairing
import Foundation
package import HTTPTypes
public import Hummingbird

/// The DPoP header names (valid tokens, so the optional initializer never fails for them).
package enum DPoPFields {
    /// `DPoP`: the proof header (RFC 9449 §4.1).
    package static let proof = HTTPField.Name("DPoP")
    /// `DPoP-Nonce`: the nonce the next proof must carry (RFC 9449 §8).
    package static let nonce = HTTPField.Name("DPoP-Nonce")

    /// The values of the `DPoP` header fields of `headers`.
    package static func proofs(in headers: HTTPFields) -> [String] {
        guard let proof else { return [] }
        return headers[values: proof]
    }

    /// `headers` with `DPoP-Nonce: nonce`.
    package static func setNonce(_ nonce: String, in headers: inout HTTPFields) {
        if let name = Self.nonce { headers[name] = nonce }
    }
}

extension DPoPPresentation {
    /// The DPoP parts of `request`: its method, its target URI (`https` when the connection is TLS, the `Host`, the
    /// path without query) and its `DPoP` header.
    ///
    /// More than one `DPoP` header is refused (RFC 9449 §4.3 check 1).
    public static func of<Context: RequestContext>(_ request: Request, context: Context) throws(PairingError) -> DPoPPresentation {
        let proofs = DPoPFields.proofs(in: request.headers)
        guard proofs.count <= 1 else { throw .dpop(.malformedProof("the request carries more than one DPoP header")) }
        let isTLS = (context as? any TransportAwareRequestContext)?.isTLS ?? false
        return DPoPPresentation(
            method: request.method.rawValue,
            uri: targetURI(isTLS: isTLS, authority: request.head.authority, path: request.uri.path),
            proof: proofs.first)
    }
}

/// Adds `DPoP-Nonce` (RFC 9449 §8) to every answer under `/api/` while DPoP is on, so a client always holds a
/// current nonce (`GET /api/pair/hello` gives one before pairing).
///
/// Add it before `PairingErrorMiddleware` so refusals carry it too.
package struct DPoPNonceMiddleware<Context: RequestContext>: RouterMiddleware {
    /// The policy whose nonces are handed out.
    let policy: DPoPPolicy

    /// A middleware handing out `policy`'s nonces.
    package init(policy: DPoPPolicy) {
        self.policy = policy
    }

    package func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard request.uri.path.hasPrefix("/api/"), let nonce = policy.currentNonce() else { return try await next(request, context) }
        var response = try await next(request, context)
        DPoPFields.setNonce(nonce, in: &response.headers)
        return response
    }
}

/// The DPoP answers (RFC 9449 §7.1, §8), without the token or proof.
package enum DPoPAnswers {
    /// `WWW-Authenticate: DPoP error="…", error_description="…", algs="ES256"` for a 401 about a token's use.
    package static func challenge(_ error: PairingError) -> String {
        let description = error.message.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "'")
        return "DPoP error=\"\(error.code)\", error_description=\"\(description)\", algs=\"ES256\""
    }

    /// The `400` an exchange or refresh gets for a proof it refused: `{"error","error_description","message"}`.
    package static func grantRefusal(_ error: PairingError) -> Response {
        struct Body: Encodable {
            let error: String
            let errorDescription: String
            let message: String
            enum CodingKeys: String, CodingKey {
                case error
                case errorDescription = "error_description"
                case message
            }
        }
        return PairingRoutes.json(.badRequest, Body(error: error.code, errorDescription: error.message, message: error.message))
    }
}
