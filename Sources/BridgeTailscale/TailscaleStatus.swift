public import Foundation
import Logging

/// This machine's place on a Tailscale tailnet: the MagicDNS name and Tailscale IPs a phone can
/// use when multicast does not reach (guest Wi-Fi, VPN, another network entirely).
public struct TailnetIdentity: Sendable, Hashable, Codable {
    /// The MagicDNS name without the trailing dot, for example `desk.tail1234.ts.net`.
    public var dnsName: String
    /// Tailscale addresses, IPv4 (100.x) first.
    public var addresses: [String]
    /// tailscaled's backend state, for example `Running`, `Stopped`, `NeedsLogin`.
    public var backendState: String
    /// Where the answer came from: `localapi` or `cli`.
    public var source: String

    /// Whether the node is up and reachable on the tailnet.
    public var isRunning: Bool { backendState == "Running" }

    /// Creates an identity.
    public init(dnsName: String, addresses: [String], backendState: String, source: String) {
        self.dnsName = dnsName
        self.addresses = addresses
        self.backendState = backendState
        self.source = source
    }

    /// Reads tailscaled's `/localapi/v0/status` JSON (the same shape `tailscale status --json` prints).
    public init(statusJSON data: Data, source: String) throws(TailscaleError) {
        guard let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            throw .badAnswer("the status is not a JSON object")
        }
        let state = object["BackendState"] as? String ?? "Unknown"
        guard let selfNode = object["Self"] as? [String: Any] else {
            throw .badAnswer("the status has no Self node (backend state \(state))")
        }
        var name = selfNode["DNSName"] as? String ?? ""
        while name.hasSuffix(".") { name.removeLast() }
        let ips = (selfNode["TailscaleIPs"] as? [String] ?? []).sorted { ($0.contains(":") ? 1 : 0) < ($1.contains(":") ? 1 : 0) }
        self.init(dnsName: name, addresses: ips, backendState: state, source: source)
    }
}

/// Why the tailnet identity could not be read.
public enum TailscaleError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Neither tailscaled's socket nor the `tailscale` command is there.
    case notInstalled
    /// tailscaled answered something unexpected.
    case badAnswer(String)
    /// Talking to tailscaled failed.
    case unreachable(String)

    /// What is wrong with Tailscale and what the bridge does about it (the fallback off, the answer it could not read).
    public var description: String {
        switch self {
        case .notInstalled:
            return "Tailscale is not installed (no tailscaled socket, no 'tailscale' command); the Tailscale fallback is off"
        case .badAnswer(let message):
            return "tailscaled gave an unexpected answer: \(message)"
        case .unreachable(let message):
            return "cannot reach tailscaled: \(message). Is it running? ('sudo systemctl start tailscaled')"
        }
    }
}
