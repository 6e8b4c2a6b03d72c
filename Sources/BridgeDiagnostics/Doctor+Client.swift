import BridgeClient
import BridgeDiscovery
import BridgePairingWire
import BridgeTLS
import Foundation

extension Doctor {
    /// The client's view of mDNS: how many bridges are announced, not whether this machine announces one.
    func bridgesOnNetwork(_ services: [ResolvedService], saved: [SavedBridges.Bridge]) -> DoctorCheck {
        let name = "bridges on the network"
        if !services.isEmpty {
            let shown = services.sorted { $0.instance.name < $1.instance.name }.prefix(6)
                .map { "'\($0.instance.name)' (\($0.hostName), port \($0.port))" }.joined(separator: ", ")
            return DoctorCheck(name: name, status: .ok, detail: "\(services.count) announced over mDNS: \(shown)")
        }
        let causes = [
            "the bridge is not running on the desktop: start it there with 'oa-bridge serve'",
            "this device and the desktop are on different networks, or the network keeps devices apart (guest Wi-Fi, client isolation): join the same network",
            "multicast is blocked on the way (a firewall dropping UDP 5353): connect by address, 'oa-bridge connect HOST:\(options.port)'",
        ]
        if !saved.isEmpty {
            return DoctorCheck(name: name, status: .ok,
                               detail: "none announced over mDNS within \(String(format: "%.0f", options.browseTime.inSeconds)) s; the saved bridges below are tried at the addresses they answered on before")
        }
        return DoctorCheck(name: name, status: .warn,
                           detail: "no bridge announced over mDNS within \(String(format: "%.0f", options.browseTime.inSeconds)) s, and none saved on this device",
                           fix: DoctorAdvice.numbered(causes))
    }

    /// The saved bridges (``SavedBridges``, `<state>/client/bridges.json`), the most recently used first (at most
    /// ``Options/reachLimit``): each reached at its saved addresses (and where mDNS shows it now), held to its saved pin,
    /// and asked with its saved token whether this device is still paired.
    func savedBridgeChecks(_ saved: SavedBridges, bridges: [SavedBridges.Bridge], discovered: [ResolvedService]) async -> [DoctorCheck] {
        guard !bridges.isEmpty else {
            return [DoctorCheck(name: "saved bridges", status: .ok, detail: "none yet",
                                fix: "scan the QR code 'oa-bridge serve' prints on the desktop", setting: .pairing)]
        }
        // Side by side: a desk that drops packets costs its timeout once, not once per saved bridge.
        return await withTaskGroup(of: (Int, DoctorCheck).self) { group in
            for (index, bridge) in bridges.prefix(options.reachLimit).enumerated() {
                group.addTask { (index, await self.savedBridge(bridge, saved: saved, discovered: discovered)) }
            }
            var rows: [(Int, DoctorCheck)] = []
            for await row in group { rows.append(row) }
            return rows.sorted { $0.0 < $1.0 }.map(\.1)
        }
    }

    private func savedBridge(_ bridge: SavedBridges.Bridge, saved: SavedBridges, discovered: [ResolvedService]) async -> DoctorCheck {
        let name = "saved bridge \(TerminalText.escapedLine(bridge.name))"
        let pin: CertificatePin?
        do {
            pin = try bridge.pin.map { try CertificatePin(parsing: $0) }
        } catch {
            return DoctorCheck(name: name, status: .fail, detail: "its saved pin '\(TerminalText.escapedLine(bridge.pin ?? ""))' cannot be read: \(error)",
                               fix: "pair again with the QR code from 'oa-bridge pair' on the desktop")
        }
        // Where it answered before, then where mDNS shows a bridge of that name now (a desktop whose address changed).
        var bases: [String] = []
        for address in bridge.addresses {
            guard let endpoint = try? BridgeEndpoint.manual(address) else { continue }
            let base = (pin == nil ? endpoint : endpoint.overTLS).httpBase
            if !bases.contains(base) { bases.append(base) }
        }
        for service in discovered where service.instance.name.caseInsensitiveCompare(bridge.name) == .orderedSame {
            for endpoint in BridgeEndpoint.candidates(for: service) {
                let base = (pin == nil ? endpoint : endpoint.overTLS).httpBase
                if !bases.contains(base) { bases.append(base) }
            }
        }
        guard !bases.isEmpty else {
            return DoctorCheck(name: name, status: .warn, detail: "no address saved for it, and mDNS does not show it now",
                               fix: DoctorAdvice.numbered(["start the bridge on the desktop ('oa-bridge serve')", "connect by address: 'oa-bridge connect HOST:\(options.port)'"]))
        }
        let connector = WebSocketConnector(timeout: options.reachTimeout, logger: logger)
        var failures: [(String, WebSocketConnectorError)] = []
        var reached: String?
        for base in bases.prefix(6) {
            do {
                _ = try await connector.request("GET", url: base + "/api/health", pin: pin)
                reached = base
                break
            } catch let error as WebSocketConnectorError {
                switch error {
                case .pinMismatch, .certificateRejected:
                    return DoctorCheck(name: name, status: .fail, detail: "\(base): \(error.description)",
                                       fix: "pair again with the QR code from 'oa-bridge pair' on the desktop, after comparing the pin it prints with 'oa-bridge identity show' there")
                default:
                    failures.append((base, error))
                }
            } catch {
                failures.append((base, .protocolViolation(String(describing: error))))
            }
        }
        guard let reached else {
            let outcome = failures.map { Doctor.outcome(of: $0.1) }.min { Doctor.likelihood($0) < Doctor.likelihood($1) } ?? .error
            return DoctorCheck(
                name: name, status: .warn,
                detail: "no saved address answered: " + failures.map { "\($0.0) \(Doctor.words(for: $0.1))" }.joined(separator: "; "),
                fix: DoctorAdvice.numbered(DoctorAdvice.unanswered(outcome, host: "the desktop", port: options.port)))
        }
        let pinText = pin.map { "; it presents the saved pin \($0)" } ?? ""
        return await tokenCheck(name: name, bridge: bridge, saved: saved, reached: reached, pin: pin, pinText: pinText, connector: connector)
    }

    private func tokenCheck(
        name: String, bridge: SavedBridges.Bridge, saved: SavedBridges, reached: String, pin: CertificatePin?, pinText: String,
        connector: WebSocketConnector
    ) async -> DoctorCheck {
        let vault = TokenVault(file: saved.credentialsFile(for: bridge))
        let pairAgain = "pair again: scan the QR code 'oa-bridge pair' shows on the desktop"
        var credential: BridgeCredential?
        var device: String?
        if let credentials = await vault.current {
            device = credentials.tokens.deviceID
            do {
                credential = try await vault.credential()
            } catch let error as BridgeClientError {
                return DoctorCheck(name: name, status: .fail, detail: "answers at \(reached)\(pinText), but refused to renew this device's token: \(error.description)",
                                   fix: pairAgain, setting: .pairing)
            } catch let error as WebSocketConnectorError {
                return DoctorCheck(name: name, status: .warn, detail: "answers at \(reached)\(pinText), but renewing the token at \(credentials.bridge) failed: \(error.description)",
                                   fix: "connect once with 'oa-bridge connect \(TerminalText.escapedLine(bridge.name))' (it renews the token at the address that answers)")
            } catch {
                return DoctorCheck(name: name, status: .warn, detail: "answers at \(reached)\(pinText), but renewing the token failed: \(error)", fix: pairAgain, setting: .pairing)
            }
        }
        let status: WebSocketConnector.Answer
        do {
            status = try await connector.request("GET", url: reached + "/api/status", pin: pin, credential: credential)
        } catch {
            return DoctorCheck(name: name, status: .warn, detail: "answers at \(reached)\(pinText), but the token could not be checked: \(Doctor.words(for: error))",
                               fix: "run 'oa-bridge doctor' again; if it persists, 'oa-bridge connect \(TerminalText.escapedLine(bridge.name))' shows the failure")
        }
        switch status.status {
        case 200 where device != nil:
            return DoctorCheck(name: name, status: .ok, detail: "answers at \(reached)\(pinText); its token is accepted (device \(device ?? ""))")
        case 200:
            return DoctorCheck(name: name, status: .ok, detail: "answers at \(reached)\(pinText); it needs no pairing (auth none)")
        case 401 where device != nil, 403 where device != nil:
            return DoctorCheck(name: name, status: .fail,
                               detail: "answers at \(reached)\(pinText), but no longer accepts this device's token (HTTP \(status.status)): the device was revoked on the desktop, or its pairings were reset",
                               fix: pairAgain, setting: .pairing)
        case 401, 403:
            return DoctorCheck(name: name, status: .warn, detail: "answers at \(reached)\(pinText), but this device is not paired with it (no token kept)", fix: pairAgain, setting: .pairing)
        default:
            return DoctorCheck(name: name, status: .warn, detail: "answers at \(reached)\(pinText), but its status answered HTTP \(status.status)",
                               fix: "is this address still the bridge? A probe of every address it announces says", setting: .probe)
        }
    }

    /// The TCP outcome a connector error stands for, to pick the advice.
    static func outcome(of error: WebSocketConnectorError) -> NetworkFindings.TCPOutcome {
        switch error {
        case .refused: return .refused
        case .timedOut: return .timeout
        case .unreachable: return .unreachable
        default: return .error
        }
    }

    /// Which outcome says most about the cause when several addresses failed: a refusal (the host is there) first.
    static func likelihood(_ outcome: NetworkFindings.TCPOutcome) -> Int {
        switch outcome {
        case .answered: return 0
        case .refused: return 1
        case .timeout: return 2
        case .unreachable: return 3
        case .error: return 4
        }
    }

    /// An error in words: a connector error says what to try; anything else by its description, never a bare code.
    static func words(for error: any Error) -> String {
        if let error = error as? WebSocketConnectorError {
            switch error {
            case .refused: return "refused the connection (nothing listens there)"
            case .timedOut: return "did not answer in time (packets dropped on the way)"
            case .unreachable(_, let reason): return "is unreachable (\(reason))"
            default: return error.description
            }
        }
        if let error = error as? BridgeClientError { return error.description }
        // Foundation's errors print as domains and codes, which tell a user nothing: say what shows more (in words: the
        // library names no flag, issue 31 item 5).
        return "failed unexpectedly (a connect at log level debug shows the details)"
    }
}
