public import BridgePairing
import Foundation
public import Hummingbird
public import Logging

/// The calling device's own account, for a paired phone (Bearer access token on both).
///
/// - `GET /api/me` → 200 `{"device_id", "name", "paired_at", "last_seen_at", "access_token_expires_at"}` (ISO 8601
///   dates); never a token or hash.
/// - `POST /api/logout` → 200 `{"device_id", "revoked_at"}`: the device is unpaired: it and every token of every
///   family it holds are revoked, its open WebSockets are closed with 4003 at once, and its tokens stop working.
///
/// Both answer 401/403/429 like every protected route. They check the token themselves (they need to know whose it
/// is), so they stay protected wherever they are registered; register them with the other protected `/api` routes.
public enum AccountRoutes {
    /// Adds `GET /api/me` and `POST /api/logout` to `router` (a router, or a route group; paths are given in full
    /// unless `prefix` says which part the group already matched, for example `"/api"` for `router.group("api")`).
    public static func register<Context: RemoteAddressRequestContext>(
        on router: some RouterMethods<Context>, authenticator: Authenticator, logger: Logger, prefix: String = ""
    ) {
        let base = String("/api".dropFirst(prefix.count))
        router.get(RouterPath(base + "/me")) { request, context -> Response in
            do {
                let device = try await authenticate(request, context, authenticator)
                return PairingRoutes.json(.ok, try await authenticator.store.account(of: device))
            } catch let error as PairingError {
                return PairingRoutes.failure(error)
            }
        }
        router.post(RouterPath(base + "/logout")) { request, context -> Response in
            do {
                let device = try await authenticate(request, context, authenticator)
                let revoked = try await authenticator.store.logout(device)
                logger.notice("device logged out", metadata: ["device": "\(revoked.id)", "peer": "\(PairingRoutes.peer(context))"])
                return PairingRoutes.json(.ok, LogoutResponse(device: revoked))
            } catch let error as PairingError {
                return PairingRoutes.failure(error)
            }
        }
    }

    /// The device whose access token the request carries (`Authorization: Bearer`).
    private static func authenticate<Context: RemoteAddressRequestContext>(
        _ request: Request, _ context: Context, _ authenticator: Authenticator
    ) async throws(PairingError) -> AuthenticatedDevice {
        try await authenticator.authenticate(
            authorization: request.headers[.authorization], address: PairingRoutes.peer(context))
    }
}
