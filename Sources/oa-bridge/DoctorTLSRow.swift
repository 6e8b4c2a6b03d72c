import BridgePairing
import BridgeTLS
import Foundation

/// What `oa-bridge doctor` says about the bridge's TLS identity: the pin to compare with a phone's, or what is wrong.
struct DoctorTLSRow {
    /// How bad it is.
    enum Level {
        case ok, warn, fail
    }

    let name = "tls identity"
    let level: Level
    let detail: String
    let fix: String?

    /// Reads the identity in `stateDirectory` without creating or changing anything.
    static func inspect(stateDirectory: URL) -> DoctorTLSRow {
        let keyPath = stateDirectory.appendingPathComponent(BridgeIdentity.keyFileName).path
        let pin: CertificatePin?
        do {
            pin = try BridgeIdentity.storedPin(in: stateDirectory)
        } catch {
            return DoctorTLSRow(level: .fail, detail: error.description, fix: "oa-bridge identity rotate (phones must pair again)")
        }
        guard let pin else {
            return DoctorTLSRow(
                level: .warn, detail: "no TLS identity yet in \(stateDirectory.path)",
                fix: "start 'oa-bridge serve': it makes one (phones get its pin in the QR code)")
        }
        if let mode = StateDirectory.permissions(ofPath: keyPath), mode != 0o600 {
            return DoctorTLSRow(
                level: .fail, detail: "the TLS key \(keyPath) has mode \(String(mode, radix: 8)), others may read it",
                fix: "chmod 600 \(keyPath), then 'oa-bridge identity rotate' if anyone else could have read it")
        }
        return DoctorTLSRow(level: .ok, detail: "pin \(pin) (compare with the phone's; 'oa-bridge identity show')", fix: nil)
    }
}
