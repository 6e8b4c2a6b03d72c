import HTTPTypes
package import Hummingbird
import NIOCore

/// Authentication off (`serve --auth none`): only loopback peers and peers inside an allowed network may open a
/// WebSocket or use `/api/`.
///
/// Its refusal says what is wrong in the bridge's words; the flags are the CLI's.
package struct NetworkGate: Sendable {
    /// The networks allowed besides loopback.
    package let allowed: [IPNetwork]

    /// A gate letting loopback and `allowed` in.
    package init(allowed: [IPNetwork]) {
        self.allowed = allowed
    }

    /// Whether a peer address (`nil` when unknown) may come in.
    package func admits(_ remoteAddress: String?) -> Bool {
        guard let remoteAddress else { return false }
        return IPNetwork.isLoopback(remoteAddress) || allowed.contains { $0.contains(remoteAddress) }
    }

    /// The 403 for a peer outside: says which address and how to allow it.
    package func refusal(for remoteAddress: String?) -> JSONErrorResponse {
        let networks = allowed.isEmpty ? "none" : allowed.map(\.description).joined(separator: ", ")
        return JSONErrorResponse(
            status: .forbidden, code: "forbidden_network",
            message: "Authentication is off on this bridge: only this machine and the allowed networks (\(networks)) may "
                + "connect, and \(remoteAddress ?? "an unknown address") is outside them. On the desktop, add its network to "
                + "the allowed networks, or turn authentication on and pair the device.")
    }
}

/// Applies a ``NetworkGate`` to every route it is attached to (the bridge attaches it to the `/api` group).
package struct NetworkGateMiddleware<Context: RemoteAddressRequestContext>: RouterMiddleware {
    /// The gate applied.
    let gate: NetworkGate

    /// A middleware applying `gate`.
    package init(gate: NetworkGate) {
        self.gate = gate
    }

    package func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let remote = context.remoteAddress?.ipAddress
        guard gate.admits(remote) else { return gate.refusal(for: remote).response }
        return try await next(request, context)
    }
}
