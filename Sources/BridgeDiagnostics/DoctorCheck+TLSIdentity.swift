import BridgePairing
import BridgeTLS
public import Foundation

extension DoctorCheck {
    /// The bridge's TLS identity in `stateDirectory`: the pin to compare with a phone's, or what is wrong with it.
    ///
    /// Reads without creating or changing anything.
    public static func tlsIdentity(stateDirectory: URL) -> DoctorCheck {
        let name = "tls identity"
        let keyPath = stateDirectory.appendingPathComponent(BridgeIdentity.keyFileName).path
        let pin: CertificatePin?
        do {
            pin = try BridgeIdentity.storedPin(in: stateDirectory)
        } catch {
            return DoctorCheck(name: name, status: .fail, detail: error.description,
                               fix: "oa-bridge identity rotate (phones must pair again)")
        }
        guard let pin else {
            return DoctorCheck(
                name: name, status: .warn, detail: "no TLS identity yet in \(stateDirectory.path)",
                fix: "start 'oa-bridge serve': it makes one (phones get its pin in the QR code)")
        }
        if let mode = StateDirectory.permissions(ofPath: keyPath), mode != 0o600 {
            return DoctorCheck(
                name: name, status: .fail,
                detail: "the TLS key \(keyPath) has mode \(String(mode, radix: 8)), others may read it",
                fix: "chmod 600 \(keyPath), then 'oa-bridge identity rotate' if anyone else could have read it")
        }
        return DoctorCheck(name: name, status: .ok, detail: "pin \(pin) (compare with the phone's; 'oa-bridge identity show')")
    }
}
