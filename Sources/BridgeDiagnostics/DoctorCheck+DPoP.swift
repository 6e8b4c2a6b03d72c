import BridgePairing
public import Foundation
import Logging

extension DoctorCheck {
    /// Paired devices whose tokens are not bound to a DPoP key (paired before DPoP, or by a client without it): a
    /// copy of their tokens works from anywhere until they expire, and `serve --dpop required` refuses them.
    ///
    /// Reads the token store in `stateDirectory`; makes nothing when there is none.
    public static func dpopBinding(stateDirectory: URL) async -> DoctorCheck {
        let name = "device binding"
        let database = stateDirectory.appendingPathComponent(TokenStore.databaseFileName)
        guard FileManager.default.fileExists(atPath: database.path) else {
            return DoctorCheck(name: name, status: .ok, detail: "no paired devices yet")
        }
        var logger = Logger(label: "oa-bridge.doctor.dpop")
        logger.logLevel = .critical
        let devices: [DeviceRecord]
        do {
            devices = try await TokenStore(directory: stateDirectory, logger: logger).listDevices(includeRevoked: false)
        } catch {
            return DoctorCheck(name: name, status: .warn, detail: "cannot read \(database.path): \(error)")
        }
        let active = devices.filter { !$0.isPending }
        let unbound = active.filter { $0.dpopBound != true }
        guard !unbound.isEmpty else {
            return DoctorCheck(name: name, status: .ok, detail: "\(active.count) paired device(s), all bound to their keys (DPoP)")
        }
        let names = unbound.prefix(5).map { "\($0.name) (\($0.id.prefix(8)))" }.joined(separator: ", ")
        return DoctorCheck(
            name: name, status: .warn,
            detail: "\(unbound.count) of \(active.count) paired device(s) hold tokens not bound to a key (DPoP): \(names); "
                + "a copy of their tokens works from another machine, and a bridge that requires DPoP refuses them",
            fix: "pair them again with an app that supports DPoP, then 'oa-bridge devices revoke ID' for the old entries",
            setting: .dpop)
    }
}
