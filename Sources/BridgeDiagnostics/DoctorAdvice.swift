/// What to try when a bridge does not answer, most likely cause first: how the connection failed says where to look.
///
/// A timeout means something dropped the packets (a firewall, most often; a bridge that is not running refuses at
/// once), a refusal that the host is there and nothing listens on the port, an unreachable host a network apart.
public enum DoctorAdvice {
    /// The causes of `outcome` for the bridge at `host` (its name, for the advice) on `port`, most likely first, each
    /// with what to do.
    public static func unanswered(_ outcome: NetworkFindings.TCPOutcome, host: String, port: Int) -> [String] {
        let firewall = "a firewall on \(host) drops port \(port): run 'oa-bridge doctor' there, which names the rule "
            + "(or 'sudo ufw allow \(port)/tcp', 'sudo nft insert rule inet filter input tcp dport \(port) accept')"
        let isolation = "the network keeps its devices apart (guest Wi-Fi, client isolation): join the desktop's own network"
        let notRunning = "the bridge is not running on \(host), or serves another port: start it with 'oa-bridge serve' "
            + "(a stale mDNS announcement can outlive it)"
        let rejecting = "a firewall on \(host) rejects port \(port): run 'oa-bridge doctor' there, which names the rule"
        let otherNetwork = "\(host) is on another network: connect this device to the desktop's network, "
            + "or connect by its Tailscale name"
        switch outcome {
        case .timeout:
            return [firewall, isolation, notRunning]
        case .refused:
            return [notRunning, rejecting]
        case .unreachable:
            return [otherNetwork, firewall]
        case .answered:
            return []
        case .error:
            return [otherNetwork, notRunning, firewall]
        }
    }

    /// The causes as one fix line: `1) …; 2) …`.
    public static func numbered(_ causes: [String]) -> String {
        causes.enumerated().map { "\($0.offset + 1)) \($0.element)" }.joined(separator: "; ")
    }

    /// What a TCP outcome means, in words (never an error code).
    public static func words(_ outcome: NetworkFindings.TCPOutcome) -> String {
        switch outcome {
        case .answered: return "answers"
        case .refused: return "refused the connection (nothing listens there)"
        case .timeout: return "did not answer in time (packets dropped on the way)"
        case .unreachable: return "is unreachable (no route to that host)"
        case .error: return "could not be tried (an address this machine cannot use)"
        }
    }
}
