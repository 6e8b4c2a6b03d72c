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
        switch error as? BridgeServerError {
        case .portInUse?, .portNotPermitted?: return "Pass --port N for another port."
        case .bindFailed?: return "Check --host, or pass --port N for another port."
        case .badWorkingDirectory?: return "Pass an existing directory with --working-directory."
        case .badFileScopeDirectory?: return "Choose another scope with --fs-scope."
        case .badNetwork?, nil: return nil
        }
    }
}
