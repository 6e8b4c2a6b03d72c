import BridgeClient
import BridgeConfig
import BridgeDiagnostics
import BridgeDiscovery
import BridgePairing
import BridgePairingUI
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
        if let error = error as? PairingPayloadError { return advice(for: error.desktopStep) }
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

    /// The commands a terminal too small for the pairing code names: `oa-bridge pair` (with `--port` off 9099) to show
    /// it again, and with `--png pairing.png` to save it as an image.
    static func pairingCommands(port: Int) -> PairingBanner.Commands {
        let show = "oa-bridge pair" + (port == 9099 ? "" : " --port \(port)")
        return PairingBanner.Commands(show: show, savePNG: show + " --png pairing.png")
    }

    /// The desktop's command for a step that gets a good pairing code again.
    static func advice(for step: PairingPayloadError.DesktopStep) -> String {
        switch step {
        case .printPayload: "On the desktop, 'oa-bridge pair --json' prints it (the QR code's URL as 'url')."
        case .newCode: "On the desktop, 'oa-bridge pair --new' makes a new code ('oa-bridge pair --json' prints it)."
        }
    }

    /// Doctor's check with the flag of the setting its fix is about added to the fix ("…, or remove 'host' from the
    /// config file.
    ///
    /// 'oa-bridge serve --host ::' (the default; …)"). A check without a fix whose detail names a setting (doctor's
    /// role) gets the flag after its detail.
    static func withFlag(_ check: DoctorCheck) -> DoctorCheck {
        guard let setting = check.setting else { return check }
        var check = check
        if let fix = check.fix {
            check.fix = fix + (".!?".contains(fix.last ?? ".") ? " " : ". ") + advice(for: setting)
        } else {
            check.detail += (".!?".contains(check.detail.last ?? ".") ? " " : ". ") + advice(for: setting)
        }
        return check
    }

    /// The flag for a setting doctor's fix is about.
    static func advice(for setting: DoctorSetting) -> String {
        switch setting {
        case .host: "Serve on every address with 'oa-bridge serve --host ::' (the default; '--host 0.0.0.0' for IPv4 only)."
        case .port: "Pass --port N to serve (and to doctor) for another port."
        case .discovery: "'--discovery off' turns announcing off; --interface chooses the network it announces on."
        case .terminalConfinement: "'oa-bridge serve --terminal-confinement unconfined' runs terminals unconfined, --no-terminal turns them off."
        case .pairing: "Or here: 'oa-bridge connect --pair' with what 'oa-bridge pair --json' prints on the desktop."
        case .probe: "Run 'oa-bridge discover --probe'."
        case .dpop: "Then 'oa-bridge serve --dpop required' refuses tokens not bound to a key."
        case .role: "'oa-bridge doctor --role desk' asks for it."
        }
    }

    /// A discovery conflict's fix with the flags of the settings it is about.
    ///
    /// For example: "give each bridge its own name on one of them; … 'oa-bridge serve --name "Desk 2"' names it;
    /// 'oa-bridge serve --interface eth0' announces on one."
    static func fix(for conflict: DiscoveryConflict) -> String {
        let flags = conflict.settings.map { setting in
            switch setting {
            case .name(let suggested?): "'oa-bridge serve --name \"\(suggested)\"' names it"
            case .name(nil): "'oa-bridge serve --name NAME' names it"
            case .interface: "'oa-bridge serve --interface eth0' announces on one"
            }
        }
        guard !flags.isEmpty else { return conflict.fix }
        return conflict.fix + ". " + flags.joined(separator: "; ") + "."
    }

    /// The command for a step discover's advice points to, in place of its words.
    static func command(for step: DiscoverStep) -> String {
        switch step {
        case .watch: "'oa-bridge discover --watch' waits for it"
        case .allTypes: "'oa-bridge discover --all' lists every service type on the network"
        case .discoveryOn: "not --discovery off"
        }
    }
}
