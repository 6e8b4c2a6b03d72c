import BridgePairing
import BridgeTLS
public import Foundation

/// Where `oa-bridge doctor` runs, which decides what it checks: the desk (a bridge runs, listens, or is set up here)
/// gets the server's checks, a client (a phone or laptop that connects to a bridge elsewhere) the client's, and
/// neither is warned about what belongs to the other.
public enum DoctorRole: String, Sendable, Hashable, Codable, CaseIterable {
    /// A bridge runs here, or is configured or installed here.
    case desk
    /// No bridge here: this machine connects to one elsewhere.
    case client

    /// What doctor found on this machine about a bridge of its own.
    public struct Evidence: Sendable, Hashable {
        /// A bridge answered `/api/health` on loopback.
        public var bridgeAnswers = false
        /// Something listens on the bridge port (from `/proc/net/tcp{,6}`).
        public var portListening = false
        /// The state directory holds a TLS identity (a bridge has run here).
        public var tlsIdentity = false
        /// The state directory holds the bridge's token store (a bridge has run here).
        public var tokenStore = false
        /// The `serve` config file, when one exists.
        public var configFile: String?
        /// The systemd unit `install-service` wrote, when one exists.
        public var serviceUnit: String?

        /// No evidence at all.
        public init() {}

        /// Reads the evidence on this machine: whether `port` listens (`/proc/net/tcp{,6}`), whether `stateDirectory`
        /// holds a TLS identity or token store, and which of `configFile` and `serviceUnit` exist.
        ///
        /// `bridgeAnswers` is what the loopback health check found.
        public static func read(
            port: Int, stateDirectory: URL, configFile: String?, serviceUnit: String?, bridgeAnswers: Bool
        ) -> Evidence {
            var evidence = Evidence()
            evidence.bridgeAnswers = bridgeAnswers
            evidence.portListening = !(NetworkFindings.listeners(port: port, tcp: NetworkFindings.readFile("/proc/net/tcp"),
                                                                 tcp6: NetworkFindings.readFile("/proc/net/tcp6")) ?? []).isEmpty
            let exists = { (path: String) in FileManager.default.fileExists(atPath: path) }
            evidence.tlsIdentity = exists(stateDirectory.appendingPathComponent(BridgeIdentity.certificateFileName).path)
            evidence.tokenStore = exists(stateDirectory.appendingPathComponent(TokenStore.databaseFileName).path)
            evidence.configFile = configFile.flatMap { exists($0) ? $0 : nil }
            evidence.serviceUnit = serviceUnit.flatMap { exists($0) ? $0 : nil }
            return evidence
        }
    }

    /// The role `evidence` points to, and why, in words for the role row.
    ///
    /// A bridge that answers or listens makes this the desk whatever else; so does a bridge set up here (a config file,
    /// a service unit, its identity or token store) that is not running now: that is the desk with its bridge stopped,
    /// not a phone.
    public static func decide(_ evidence: Evidence) -> (role: DoctorRole, reasons: [String]) {
        var reasons: [String] = []
        if evidence.bridgeAnswers { reasons.append("a bridge answers on this machine") }
        if evidence.portListening, !evidence.bridgeAnswers { reasons.append("something listens on the bridge port") }
        if let unit = evidence.serviceUnit { reasons.append("the service unit \(unit) is installed") }
        if let file = evidence.configFile { reasons.append("the serve configuration \(file) exists") }
        if evidence.tlsIdentity { reasons.append("the state directory holds a bridge's TLS identity") }
        if evidence.tokenStore, !evidence.tlsIdentity { reasons.append("the state directory holds a bridge's token store") }
        return (reasons.isEmpty ? .client : .desk, reasons)
    }
}
