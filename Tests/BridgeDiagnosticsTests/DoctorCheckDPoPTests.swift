import BridgeDiagnostics
import BridgePairing
import Foundation
import Testing

/// Issue 30: `doctor` warns about paired devices whose tokens are not bound to a DPoP key.
@Suite("doctor: device binding (DPoP)", .tags(.unit))
struct DoctorCheckDPoPTests {
    @Test("no database: ok and nothing made; all bound: ok; one unbound: warn naming it, with the fix")
    func bindingCheck() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("oa-doctor-dpop-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let empty = await DoctorCheck.dpopBinding(stateDirectory: directory)
        #expect(empty.status == .ok)
        #expect(!FileManager.default.fileExists(atPath: directory.path))

        let store = try TokenStore(directory: directory)
        let first = try await store.issuePairingToken()
        _ = try await store.exchange(pairingToken: first.token, deviceName: "Bound phone", dpopThumbprint: "jkt-of-a-key")
        let bound = await DoctorCheck.dpopBinding(stateDirectory: directory)
        #expect(bound.status == .ok && bound.detail.contains("all bound"))

        let second = try await store.issuePairingToken()
        _ = try await store.exchange(pairingToken: second.token, deviceName: "Old tablet")
        let unbound = await DoctorCheck.dpopBinding(stateDirectory: directory)
        #expect(unbound.status == .warn)
        #expect(unbound.detail.contains("Old tablet") && !unbound.detail.contains("Bound phone"))
        #expect(unbound.fix?.contains("pair them again") == true)
        #expect(unbound.setting == .dpop && !unbound.detail.contains("--"), "the command line names the flag: \(unbound.detail)")
    }
}
