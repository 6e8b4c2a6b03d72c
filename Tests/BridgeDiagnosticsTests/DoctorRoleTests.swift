import BridgeDiagnostics
import BridgeTestKit
import Foundation
import Testing

/// Where doctor runs, and what it advises first: pure decisions, no system state.
@Suite("Doctor role and advice", .tags(.unit))
struct DoctorRoleTests {
    @Test("nothing of a bridge on this machine: a client, with no reason to give")
    func client() {
        let decided = DoctorRole.decide(DoctorRole.Evidence())
        #expect(decided.role == .client)
        #expect(decided.reasons.isEmpty)
    }

    @Test("a bridge that answers, listens, or is set up here (config file, service unit, identity, token store) makes the desk, each named")
    func desk() {
        var answers = DoctorRole.Evidence()
        answers.bridgeAnswers = true
        answers.portListening = true
        #expect(DoctorRole.decide(answers).role == .desk)
        #expect(DoctorRole.decide(answers).reasons == ["a bridge answers on this machine"])

        var stopped = DoctorRole.Evidence()
        stopped.configFile = "/home/u/.config/oa-bridge/config.yaml"
        #expect(DoctorRole.decide(stopped).role == .desk, "a bridge set up but not running is the desk with its bridge stopped")
        #expect(DoctorRole.decide(stopped).reasons == ["the serve configuration /home/u/.config/oa-bridge/config.yaml exists"])

        var installed = DoctorRole.Evidence()
        installed.serviceUnit = "/home/u/.config/systemd/user/oa-bridge.service"
        installed.tlsIdentity = true
        installed.tokenStore = true
        let reasons = DoctorRole.decide(installed).reasons
        #expect(DoctorRole.decide(installed).role == .desk)
        #expect(reasons.count == 2 && reasons[0].contains("oa-bridge.service") && reasons[1].contains("TLS identity"))

        var store = DoctorRole.Evidence()
        store.tokenStore = true
        #expect(DoctorRole.decide(store).role == .desk)
        var listening = DoctorRole.Evidence()
        listening.portListening = true
        #expect(DoctorRole.decide(listening).reasons == ["something listens on the bridge port"])
    }

    @Test("a timeout is a firewall first and a stopped bridge last; a refusal is a stopped bridge first; unreachable is another network first")
    func adviceByLikelihood() {
        let timeout = DoctorAdvice.unanswered(.timeout, host: "desk.local", port: 9099)
        #expect(timeout.first?.hasPrefix("a firewall on desk.local drops port 9099") == true)
        #expect(timeout.last?.hasPrefix("the bridge is not running on desk.local") == true)
        let refused = DoctorAdvice.unanswered(.refused, host: "desk.local", port: 9099)
        #expect(refused.first?.hasPrefix("the bridge is not running on desk.local") == true)
        #expect(refused.count == 2 && refused[1].contains("rejects port 9099"))
        #expect(DoctorAdvice.unanswered(.unreachable, host: "desk.local", port: 9099).first?.contains("on another network") == true)
        #expect(DoctorAdvice.unanswered(.answered, host: "desk.local", port: 9099).isEmpty)
        #expect(DoctorAdvice.numbered(["a", "b"]) == "1) a; 2) b")
    }

    @Test("outcomes are told in words, never as codes")
    func words() {
        for outcome in [NetworkFindings.TCPOutcome.refused, .timeout, .unreachable, .error] {
            let text = DoctorAdvice.words(outcome)
            #expect(text.contains(" ") && !text.contains(outcome.rawValue + ")") && !text.contains("-"), "\(outcome): \(text)")
        }
    }
}

/// The role's evidence read from a state directory and files of the test's own, on a port the test holds without
/// listening (so nothing else on this machine can make it listen meanwhile).
@Suite("Doctor role evidence", .tags(.unit))
struct DoctorRoleEvidenceTests {
    @Test("an empty state directory and no config file or unit: a client; a TLS identity or a config file makes the desk")
    func evidenceFromFiles() throws {
        let port = try ReservedPort()
        defer { withExtendedLifetime(port) {} }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("doctor-role-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = directory.appendingPathComponent("config.yaml").path
        let unit = directory.appendingPathComponent("oa-bridge.service").path

        let none = DoctorRole.Evidence.read(port: port.port, stateDirectory: directory, configFile: config, serviceUnit: unit, bridgeAnswers: false)
        #expect(none == DoctorRole.Evidence(), "nothing exists and the port does not listen")
        #expect(DoctorRole.decide(none).role == .client)

        FileManager.default.createFile(atPath: config, contents: Data("port: 9100\n".utf8))
        let configured = DoctorRole.Evidence.read(port: port.port, stateDirectory: directory, configFile: config, serviceUnit: unit, bridgeAnswers: false)
        #expect(configured.configFile == config && configured.serviceUnit == nil)
        #expect(DoctorRole.decide(configured).role == .desk)

        try FileManager.default.removeItem(atPath: config)
        // The certificate file serve writes beside its key (BridgeIdentity.certificateFileName).
        FileManager.default.createFile(atPath: directory.appendingPathComponent("tls-cert.pem").path, contents: Data())
        let ranHere = DoctorRole.Evidence.read(port: port.port, stateDirectory: directory, configFile: config, serviceUnit: unit, bridgeAnswers: false)
        #expect(ranHere.tlsIdentity && !ranHere.tokenStore && ranHere.configFile == nil)
        #expect(DoctorRole.decide(ranHere).role == .desk)
    }
}
