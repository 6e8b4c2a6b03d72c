import BridgeClient
import BridgeConfig
import BridgeDiagnostics
import BridgeDiscovery
import BridgePairing
import BridgePairingUI
import BridgeServer
import Testing
@testable import oa_bridge

/// The libraries' errors say what is wrong; the command line adds the flag that changes it (issue 31 item 5).
@Suite("the command line names the flag for a library error", .tags(.unit))
struct FlagAdviceTests {
    @Test("a taken or privileged port names --port, a bad directory its flag, a storage failure --state-dir")
    func flags() {
        let errors: [(any Error, String)] = [
            (BridgeServerError.portInUse(host: "::", port: 9099), "--port"),
            (BridgeServerError.portNotPermitted(host: "::", port: 80), "--port"),
            (BridgeServerError.bindFailed(host: "192.0.2.1", port: 9099, reason: "x"), "--host"),
            (BridgeServerError.badWorkingDirectory("/nowhere"), "--working-directory"),
            (BridgeServerError.badFileScopeDirectory(scope: "home", directory: nil), "--fs-scope"),
            (PairingError.storage(PairingStorageFailure(.createDirectory, path: "/x", cause: .notADirectory)), "--state-dir"),
        ]
        for (error, flag) in errors {
            #expect(!"\(error)".contains(flag), "the library's own words name \(flag): \(error)")
            #expect(FlagAdvice.advice(for: error)?.contains(flag) == true, "no \(flag) for \(error)")
        }
        #expect(FlagAdvice.advice(for: PairingError.missingToken) == nil)
        #expect(FlagAdvice.advice(for: BridgeServerError.badNetwork("x")) == nil)
    }

    @Test("client, config and discovery errors name no flag; the command line adds --pair, --port, --config, --agent, --interface, --backend")
    func clientConfigDiscovery() {
        let errors: [(any Error, String)] = [
            (BridgeClientError.needsPairing(address: "ws://192.0.2.1:9099/", detail: "HTTP 401"), "--pair"),
            (BridgeClientError.unauthorized("HTTP 401 to a client without a token: this client has to pair with the bridge first"), "--pair"),
            (DPoPClientKeyError.missing(path: "/x/dpop/b.key"), "--pair"),
            (LocalPairingCodeError.unreachable(url: "http://127.0.0.1:9099", reason: "refused"), "--port"),
            (ConfigError.missing("/x/config.yaml"), "--config"),
            (ConfigError.agentCommand("unterminated single quote in 'x"), "--agent"),
            (DiscoveryError.unknownInterface("eth9"), "--interface"),
            (DiscoveryError.backendUnavailable("the avahi backend is not available on this platform; use the dnssd backend"), "--backend"),
        ]
        for (error, flag) in errors {
            #expect(!"\(error)".contains("--"), "the library's own words name a flag: \(error)")
            #expect(FlagAdvice.advice(for: error)?.contains(flag) == true, "no \(flag) for \(error)")
        }
        #expect(FlagAdvice.advice(for: BridgeClientError.timedOut("x")) == nil)
    }

    @Test("a pasted pairing code that is not one names no command; the command line adds 'oa-bridge pair --json' or '--new'")
    func pairingPayload() {
        let errors: [(PairingPayloadError, String)] = [
            (.unrecognized, "'oa-bridge pair --json' prints it"), (.invalidJSON(reason: "x"), "'oa-bridge pair --json' prints it"),
            (.missingFragment, "'oa-bridge pair --json' prints it (the QR code's URL as 'url')"), (.invalidFragment, "'oa-bridge pair --new'"),
        ]
        for (error, command) in errors {
            #expect(!error.description.contains("oa-bridge") && !error.description.contains("--"), "the library names a command: \(error)")
            #expect(error.description.contains("the desktop"), "\(error)")
            #expect(FlagAdvice.advice(for: error)?.contains(command) == true, "no \(command) for \(error)")
        }
    }

    @Test("a terminal too small for the pairing code: the command line gives the banner 'oa-bridge pair' (--port off 9099) and --png")
    func pairingCommands() throws {
        #expect(FlagAdvice.pairingCommands(port: 9099) == PairingBanner.Commands(show: "oa-bridge pair", savePNG: "oa-bridge pair --png pairing.png"))
        let commands = FlagAdvice.pairingCommands(port: 9100)
        #expect(commands == PairingBanner.Commands(show: "oa-bridge pair --port 9100", savePNG: "oa-bridge pair --port 9100 --png pairing.png"))
        let payload = PairingPayload(host: "192.168.1.20", port: 9100, session: "s", name: "desk", token: "t")
        let text = try PairingBanner.text(
            payload: payload, expiresAt: nil, port: 9100, ansiColors: false, terminal: .init(columns: 60, rows: 20), commands: commands)
        #expect(text.contains("\n  oa-bridge pair --port 9100 --png pairing.png\n"), "\(text)")
        #expect(text.split(whereSeparator: \.isWhitespace).joined(separator: " ").contains("'oa-bridge pair --port 9100' shows a new one."), "\(text)")
    }

    @Test("doctor's fixes name no flag; the command line adds the setting's: --host, --port, --discovery/--interface, --terminal-confinement")
    func doctorFixes() {
        let settings: [(DoctorSetting, String)] = [
            (.host, "--host ::"), (.port, "--port N"), (.discovery, "--interface"), (.terminalConfinement, "--terminal-confinement unconfined"),
            (.pairing, "connect --pair"), (.probe, "discover --probe"), (.dpop, "serve --dpop required"),
        ]
        for (setting, flag) in settings {
            let check = DoctorCheck(name: "x", status: .warn, detail: "d", fix: "serve on every address", setting: setting)
            let shown = FlagAdvice.withFlag(check).fix ?? ""
            #expect(shown.hasPrefix("serve on every address. ") && shown.contains(flag), "\(shown)")
        }
        // A check without a fix (the role row): the flag follows its detail.
        let role = FlagAdvice.withFlag(DoctorCheck(name: "role", status: .ok, detail: "client: … (doctor's desk role checks this machine as a desk)", setting: .role))
        #expect(role.fix == nil && role.detail.hasSuffix("as a desk). 'oa-bridge doctor --role desk' asks for it."), "\(role.detail)")
        let plain = DoctorCheck(name: "x", status: .warn, detail: "d", fix: "sudo ufw allow 9099/tcp")
        #expect(FlagAdvice.withFlag(plain) == plain)
        #expect(DoctorCheck.terminalConfinement(probe: { .success(0) }).fix?.contains("--") == false)
    }

    @Test("discover's conflict fixes name no flag; the command line adds --name (with the suggested name) and --interface")
    func conflictFixes() {
        let desk = ServiceInstance(name: "Desk", type: "_openagents._tcp")
        let conflicts: [(DiscoveryConflict, [String])] = [
            (.sharedName(instance: desk, hosts: ["a.local", "b.local"]), [#"--name "Desk 2""#, "--interface eth0"]),
            (.renamedAfterCollision(original: "Desk", renamed: desk, originalHost: "a.local", renamedHost: "b.local"), [#"--name "Desk (b)""#]),
            (.renamedAfterCollision(original: "Desk", renamed: desk, originalHost: "a.local", renamedHost: "a.local"), ["--name NAME"]),
            (.keepsRenaming(base: "Desk", host: "a.local", names: ["Desk", "Desk #2", "Desk #3"]), ["--interface eth0", #"--name "Desk desk""#]),
        ]
        for (conflict, flags) in conflicts {
            #expect(!conflict.fix.contains("--"), "the library names no flag: \(conflict.fix)")
            let shown = FlagAdvice.fix(for: conflict)
            #expect(shown.hasPrefix(conflict.fix + ". "), "\(shown)")
            for flag in flags { #expect(shown.contains(flag), "no \(flag) in \(shown)") }
        }
    }

    @Test("discover's advice words its steps; the command line names discover --watch, --all and --discovery off")
    func discoverSteps() {
        let flags: [DiscoverStep: String] = [.watch: "discover --watch", .allTypes: "discover --all", .discoveryOn: "--discovery off"]
        for step in DiscoverStep.allCases {
            #expect(!step.words.contains("--"))
            #expect(FlagAdvice.command(for: step).contains(flags[step] ?? "?"), "\(step)")
        }
        let advice = DiscoveryText.nothingFound(type: .openAgents, seconds: 2, say: FlagAdvice.command(for:))
        #expect(advice.contains("('oa-bridge discover --watch' waits for it.)") && advice.contains("'oa-bridge discover --all' lists every service type"))
        let verdict = ServiceTypeWatcher.render([ServiceTypeSighting(type: "_ipp._tcp", interface: "eth0")], ours: .openAgents, seconds: 2,
                                                say: FlagAdvice.command(for:))
        #expect(verdict.contains("with discovery on (not --discovery off)"), "\(verdict)")
    }
}
