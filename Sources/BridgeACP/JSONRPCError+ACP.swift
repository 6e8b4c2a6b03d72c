package import BridgeRPC

extension JSONRPCError {
    /// -32002 (ACP's "resource not found"): `session` is not a session the bridge runs.
    package static func unknownSession(_ session: String) -> JSONRPCError {
        JSONRPCError(code: ACPMethod.resourceNotFoundCode, message: "Unknown session \(session)", data: ["sessionId": .string(session)])
    }
}
