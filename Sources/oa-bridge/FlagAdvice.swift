import BridgeClient
import BridgeConfig
import BridgeDiscovery
import BridgePairing
import BridgeServer

/// The flag that changes what a library error is about: the libraries say what is wrong (issue 31 item 5), and
/// only the command line knows its flags, so it adds the flag to the message it prints.
enum FlagAdvice {
    /// A sentence naming the flag for `error`, if one fits.
    static func advice(for error: any Error) -> String? {
        if case .storage? = error as? PairingError {
            return "To keep the state somewhere else, pass --state-dir DIR."
        }
        if let error = error as? BridgeClientError { return advice(for: error) }
        if case .missing? = error as? DPoPClientKeyError {
            return "Pair with --pair and the new code ('oa-bridge pair --json' on the desktop prints it)."
        }
        if case .unreachable? = error as? LocalPairingCodeError { return "Pass --port N if the bridge is not on 9099." }
        switch error as? ConfigError {
        case .missing?: return "Leave out --config for the default location."
        case .agentCommand?: return "Check the quotes of --agent (or the config file's agent)."
        default: break
        }
        switch error as? DiscoveryError {
        case .unknownInterface?: return "Pass one of them with --interface NAME."
        case .backendUnavailable?: return "Pass --backend dnssd."
        default: break
        }
        switch error as? BridgeServerError {
        case .portInUse?, .portNotPermitted?: return "Pass --port N for another port."
        case .bindFailed?: return "Check --host, or pass --port N for another port."
        case .badWorkingDirectory?: return "Pass an existing directory with --working-directory."
        case .badFileScopeDirectory?: return "Choose another scope with --fs-scope."
        case .badNetwork?, nil: return nil
        }
    }

    /// The flag for a client that has to pair: `connect --pair` with what the desktop prints.
    private static func advice(for error: BridgeClientError) -> String? {
        switch error {
        case .needsPairing, .unauthorized:
            return "On the desktop run 'oa-bridge pair --json', then here: oa-bridge connect --pair '<what it printed>'."
        default:
            return nil
        }
    }
}
