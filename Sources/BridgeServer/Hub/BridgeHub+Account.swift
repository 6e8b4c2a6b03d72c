import BridgeACP
import BridgePairing
import BridgeRPC
import Foundation
import Logging

/// `_oa/me` and `_oa/logout`: a paired phone asks who it is, or unpairs itself, over its WebSocket.
extension BridgeHub {
    /// `_oa/me`: the device this connection authenticated as (`deviceId`, `name`, `pairedAt`, `lastSeenAt`,
    /// `accessTokenExpiresAt`, ISO 8601 dates), never a secret.
    func me(_ request: JSONRPCRequest, from id: ConnectionID, batch: UInt64?) async {
        guard let device = connections.device(of: id), let store = configuration.authenticator?.store else {
            fail(id, request: request.id, BridgeErrors.noDevice(request.method), batch: batch)
            return
        }
        do {
            let account = try await store.account(of: device)
            var result: [String: JSONValue] = [
                "deviceId": .string(account.deviceID),
                "name": .string(account.name),
                "pairedAt": .string(account.pairedAt.formatted(.iso8601)),
                "accessTokenExpiresAt": .string(account.accessTokenExpiresAt.formatted(.iso8601)),
            ]
            result["lastSeenAt"] = account.lastSeenAt.map { .string($0.formatted(.iso8601)) } ?? .null
            answer(request, result: .object(result), to: id, batch: batch)
        } catch {
            fail(id, request: request.id, BridgeHub.rpcError(error), batch: batch)
        }
    }

    /// `_oa/logout`: revokes this connection's device (all its tokens), answers `{"deviceId", "revokedAt"}`, then
    /// closes every connection of the device with 4003, this one included.
    func logout(_ request: JSONRPCRequest, from id: ConnectionID, batch: UInt64?) async {
        guard let device = connections.device(of: id), let store = configuration.authenticator?.store else {
            fail(id, request: request.id, BridgeErrors.noDevice(request.method), batch: batch)
            return
        }
        // The store announces the revocation at once; this connection gets its answer before its close.
        connections.setLoggingOut(id, true)
        defer { connections.setLoggingOut(id, false) }
        do {
            let revoked = try await store.logout(device)
            connections[id]?.logger.notice("device logged out over its WebSocket")
            let response = LogoutResponse(device: revoked)
            answer(request, result: [
                "deviceId": .string(response.deviceID), "revokedAt": .string(response.revokedAt.formatted(.iso8601)),
            ], to: id, batch: batch)
        } catch {
            fail(id, request: request.id, BridgeHub.rpcError(error), batch: batch)
            return
        }
        connections.setLoggingOut(id, false)
        revoked(.device(device.deviceID))
    }

    /// Answers `request` with an official-spelling `result`, converted to the client's dialect.
    private func answer(_ request: JSONRPCRequest, result: JSONValue, to id: ConnectionID, batch: UInt64?) {
        let dialect = connections[id]?.dialect
        deliver(JSONRPCResponse(id: request.id, result: dialect?.toClient(result) ?? result), to: id, batch: batch)
    }

    /// A token store failure as a JSON-RPC error (-32603, `data.error` the store's error code).
    private static func rpcError(_ error: PairingError) -> JSONRPCError {
        JSONRPCError.internalError(error.message, data: ["error": .string(error.code)])
    }
}
