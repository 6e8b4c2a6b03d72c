import BridgeACP
import BridgeRPC
import BridgeTerminal
import Foundation
import Logging

/// What the agent is told the client can do, and what the phones' own capabilities decide.
///
/// The rule: capabilities served on the desktop (`fs`, `terminal`) are advertised when the bridge serves them;
/// capabilities a phone answers (`elicitation.form`, `elicitation.url`) are advertised when at least one phone
/// connected when the agent (re)starts advertised them (the agent's capabilities are fixed for its life, so a phone
/// that connects later and advertises more gains nothing until the agent restarts). A request of the agent goes to the
/// attached phones able to answer it; when phones are attached and none is, it fails at once. Terminal
/// authentication methods run on the desktop, so `auth.terminal` is false.
extension BridgeHub {
    /// The `clientCapabilities` of the bridge's `initialize` to the agent (see the extension's documentation).
    func agentClientCapabilities() -> JSONValue {
        var capabilities: [String: JSONValue] = [
            "fs": ["readTextFile": true, "writeTextFile": true],
            "terminal": .bool(terminals.settings.enabled),
            "auth": ["terminal": false],
        ]
        var elicitation: [String: JSONValue] = [:]
        for client in connections.clients {
            guard let advertised = client.capabilities?["elicitation"], BridgeHub.advertises(advertised) else { continue }
            // Bare `elicitation` ({} or true) counts as form, as in ``answersMode(of:_:)``.
            if advertised.objectValue?.isEmpty == true || advertised == .bool(true) { elicitation["form"] = [:] }
            for mode in ["form", "url"] where BridgeHub.advertises(advertised[mode]) { elicitation[mode] = [:] }
        }
        if !elicitation.isEmpty { capabilities["elicitation"] = .object(elicitation) }
        return .object(capabilities)
    }

    /// Whether client `id` can answer the agent's `request` beyond ``canAnswer(_:_:)``: an `elicitation/create` of mode
    /// `url` needs `clientCapabilities.elicitation.url`, one of mode `form` (the default) `elicitation.form` (a phone
    /// that advertised bare `elicitation` counts for form).
    func answersMode(of request: JSONRPCRequest, _ id: ConnectionID) -> Bool {
        guard request.method == ACPMethod.elicitationCreate, let elicitation = connections[id]?.capabilities?["elicitation"] else { return true }
        let mode = request.params?["mode"]?.stringValue ?? "form"
        if mode == "form", elicitation.objectValue?.isEmpty == true || elicitation == .bool(true) { return true }
        return BridgeHub.advertises(elicitation[mode])
    }

    /// Whether a capability value says yes: present, not `null`, not `false`.
    static func advertises(_ value: JSONValue?) -> Bool {
        guard let value else { return false }
        return value != .null && value != .bool(false)
    }

    // MARK: authenticate

    /// `authenticate` from a phone: a method the agent answers itself is forwarded; one that must run on the desktop
    /// is refused with what to do there (`-32602`): a `terminal` method (the agent's own login program, run in a
    /// terminal), and an `env_var` method whose variables are not set in the agent's environment.
    func desktopOnlyAuthentication(_ params: JSONValue?) -> JSONRPCError? {
        guard case .running(let handle) = agentLink.state, let methodID = params?["methodId"]?.stringValue,
              let method = handle.initializeResult["authMethods"]?.arrayValue?.first(where: { $0["id"]?.stringValue == methodID })
        else { return nil }
        let name = method["name"]?.stringValue ?? methodID
        switch method["type"]?.stringValue {
        case "terminal":
            let program = ((configuration.agentCommand ?? []) + (method["args"]?.arrayValue?.compactMap(\.stringValue) ?? []))
                .joined(separator: " ")
            return JSONRPCError.invalidParams(
                "the authentication method \(name) (\(methodID)) runs the agent's login in a terminal on the desktop; run `\(program)` "
                    + "there, then try again (the bridge runs no login terminal for a phone)",
                data: ["methodId": .string(methodID), "type": "terminal", "runsOn": "desktop"])
        case "env_var":
            let environment = ProcessInfo.processInfo.environment.merging(configuration.agentEnvironment) { _, agent in agent }
            let missing = (method["vars"]?.arrayValue ?? []).compactMap { variable -> String? in
                guard let variableName = variable["name"]?.stringValue, variable["optional"] != .bool(true) else { return nil }
                return environment[variableName] == nil ? variableName : nil
            }
            guard !missing.isEmpty else { return nil }
            return JSONRPCError.invalidParams(
                "the authentication method \(name) (\(methodID)) needs \(missing.joined(separator: ", ")) in the agent's environment "
                    + "on the desktop; set it there (agent-env in the oa-bridge config file) and restart oa-bridge serve",
                data: ["methodId": .string(methodID), "type": "env_var", "runsOn": "desktop",
                       "missing": .array(missing.map(JSONValue.string))])
        default:
            return nil
        }
    }
}
