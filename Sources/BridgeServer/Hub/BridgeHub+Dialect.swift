import BridgeACP
import BridgeRPC
import Logging

/// Agent notifications in a client's dialect: never a silent merge of two keys.
extension BridgeHub {
    /// The agent's notification (official spelling) as `dialect` gets it: an extension notification's params untouched,
    /// others converted; when two keys of one object would become one (`fooBar` and `foo_bar` in the seed dialect),
    /// ``BridgeMethod/notificationWithheld`` instead, and a warning in the log.
    func clientNotification(method: String, params: JSONValue?, in dialect: ACPDialect) -> JSONRPCNotification {
        guard let params, !BridgeHub.isExtension(method) else { return JSONRPCNotification(method: method, params: params) }
        do throws(ACPKeyCollision) {
            return JSONRPCNotification(method: method, params: try dialect.checkedToClient(params))
        } catch {
            let withheld = BridgeHub.withheld(method: method, params: params, collision: error)
            logger.warning("an agent notification has keys that collide in the client's dialect; sent \(BridgeMethod.notificationWithheld) instead", metadata: [
                "method": "\(method)", "dialect": "\(dialect)", "session": "\(params["sessionId"]?.stringValue ?? "-")",
                "seq": "\(params["_meta"]?["seq"]?.intValue.map(String.init) ?? "-")", "collision": "\(error)",
            ])
            // The notice's own keys never collide; converted like any other notification of the bridge.
            return JSONRPCNotification(method: BridgeMethod.notificationWithheld, params: dialect.toClient(withheld))
        }
    }

    /// The params of ``BridgeMethod/notificationWithheld`` for `method`'s `params` (official spelling).
    static func withheld(method: String, params: JSONValue, collision: ACPKeyCollision) -> JSONValue {
        var members: [String: JSONValue] = ["method": .string(method), "error": collision.rpcError(fromClient: false).jsonValue]
        if let session = params["sessionId"] { members["sessionId"] = session }
        if let seq = params["_meta"]?["seq"] { members["_meta"] = ["seq": seq] }
        return .object(members)
    }
}
