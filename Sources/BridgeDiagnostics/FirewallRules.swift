import Foundation

/// The packet filter rules that keep phones from the bridge port: read from nftables (`nft -j list ruleset`, the
/// rules named by `nft -a list ruleset`) or iptables (`iptables -S`), each found rule named the way its own tool
/// prints it, with the command that lets the port through.
///
/// The readers take the tools' output as text, so the parsing is tested without a firewall.
public enum FirewallRules {
    /// A rule (or a chain's policy) that drops or rejects new TCP connections to the port.
    public struct Finding: Sendable, Hashable {
        /// Which tool holds it: `nftables`, `iptables` or `ip6tables`.
        public var source: String
        /// Where it sits, for example `table inet filter, chain input`.
        public var location: String
        /// The rule as the tool prints it (`iifname "eth0" tcp dport 9099 drop`), or the chain's policy.
        public var rule: String
        /// `drop` or `reject`.
        public var verdict: String
        /// A command that lets the port through ahead of it.
        public var fix: String
        /// Whether this is a chain's default policy (nothing accepts the port) rather than a rule naming it.
        public var isPolicy: Bool

        /// The finding in one line, for a doctor row.
        public var summary: String {
            isPolicy
                ? "\(source) \(location): policy \(verdict), and no rule accepts the port"
                : "\(source) \(location): '\(rule)'"
        }
    }

    // MARK: - nftables

    /// The rules in `json` (`nft -j list ruleset`) that drop or reject TCP `port` on its way in (chains on the
    /// `input` or `prerouting` hook, and regular chains, which those may jump to), named with their text from
    /// `listing` (`nft -a list ruleset`, whose `# handle N` comments tie the two together).
    ///
    /// A base `input` chain whose policy is drop, with no rule accepting the port, is a finding too.
    public static func nftables(json: String, listing: String, port: Int) -> [Finding] {
        guard let root = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any],
              let items = root["nftables"] as? [[String: Any]] else { return [] }
        var sets: [String: [Any]] = [:]
        var chains: [String: [String: Any]] = [:]
        var rules: [[String: Any]] = []
        for item in items {
            if let set = item["set"] as? [String: Any], let key = chainKey(set) {
                sets[key] = set["elem"] as? [Any] ?? []
            } else if let chain = item["chain"] as? [String: Any], let key = chainKey(chain) {
                chains[key] = chain
            } else if let rule = item["rule"] as? [String: Any] {
                rules.append(rule)
            }
        }
        let texts = nftRuleTexts(listing)
        var findings: [Finding] = []
        var accepting: Set<String> = []
        for rule in rules {
            guard let family = rule["family"] as? String, ["ip", "ip6", "inet"].contains(family),
                  let table = rule["table"] as? String, let chainName = rule["chain"] as? String,
                  let expressions = rule["expr"] as? [[String: Any]] else { continue }
            let chainID = "\(family) \(table) \(chainName)"
            let hook = chains[chainID]?["hook"] as? String
            guard hook == nil || hook == "input" || hook == "prerouting" else { continue }
            var matchesPort: Bool?
            var verdict: String?
            for expression in expressions {
                if let match = expression["match"] as? [String: Any], isTCPDestinationPort(match["left"]) {
                    let inside = portIn(match["right"], port: port, sets: sets, family: family, table: table)
                    let negated = (match["op"] as? String) == "!="
                    matchesPort = (matchesPort ?? true) && (negated ? !inside : inside)
                }
                for key in ["drop", "reject", "accept"] where expression.keys.contains(key) { verdict = key }
            }
            guard matchesPort == true, let verdict else { continue }
            if verdict == "accept" {
                accepting.insert(chainID)
                continue
            }
            let handle = rule["handle"] as? Int
            let text = handle.flatMap { texts[NFTRuleKey(family: family, table: table, chain: chainName, handle: $0)] }
                ?? "tcp dport \(port) \(verdict)"
            findings.append(Finding(
                source: "nftables", location: "table \(family) \(table), chain \(chainName)\(handle.map { " (handle \($0))" } ?? "")",
                rule: text, verdict: verdict,
                fix: "sudo nft insert rule \(family) \(table) \(chainName) tcp dport \(port) accept"
                    + (handle.map { " (or remove it: sudo nft delete rule \(family) \(table) \(chainName) handle \($0))" } ?? "")
                    + "; to keep it, change /etc/nftables.conf",
                isPolicy: false))
        }
        for (id, chain) in chains.sorted(by: { $0.key < $1.key }) {
            guard chain["hook"] as? String == "input", chain["policy"] as? String == "drop", !accepting.contains(id),
                  let family = chain["family"] as? String, ["ip", "ip6", "inet"].contains(family),
                  let table = chain["table"] as? String, let name = chain["name"] as? String else { continue }
            findings.append(Finding(
                source: "nftables", location: "table \(family) \(table), chain \(name)", rule: "policy drop", verdict: "drop",
                fix: "sudo nft add rule \(family) \(table) \(name) tcp dport \(port) accept; to keep it, change /etc/nftables.conf",
                isPolicy: true))
        }
        return findings
    }

    private struct NFTRuleKey: Hashable {
        var family: String
        var table: String
        var chain: String
        var handle: Int
    }

    private static func chainKey(_ object: [String: Any]) -> String? {
        guard let family = object["family"] as? String, let table = object["table"] as? String,
              let name = object["name"] as? String else { return nil }
        return "\(family) \(table) \(name)"
    }

    private static func isTCPDestinationPort(_ left: Any?) -> Bool {
        guard let left = left as? [String: Any], let payload = left["payload"] as? [String: Any] else { return false }
        // `tcp dport 9099`, or `meta l4proto tcp th dport 9099` (the transport header of any protocol).
        return ["tcp", "th"].contains(payload["protocol"] as? String ?? "") && payload["field"] as? String == "dport"
    }

    /// Whether `port` is in a match's right-hand side: a number, an anonymous set, a range, or a named set (`@name`).
    private static func portIn(_ right: Any?, port: Int, sets: [String: [Any]], family: String, table: String) -> Bool {
        if let value = right as? Int { return value == port }
        if let name = right as? String, name.hasPrefix("@") {
            return (sets["\(family) \(table) \(name.dropFirst())"] ?? []).contains { portIn($0, port: port, sets: sets, family: family, table: table) }
        }
        guard let object = right as? [String: Any] else { return false }
        if let elements = object["set"] as? [Any] {
            return elements.contains { portIn($0, port: port, sets: sets, family: family, table: table) }
        }
        if let bounds = object["range"] as? [Int], bounds.count == 2 { return (bounds[0]...max(bounds[0], bounds[1])).contains(port) }
        return false
    }

    /// `nft -a list ruleset` text → each rule's text (without its `# handle N` comment) by family, table, chain and handle.
    private static func nftRuleTexts(_ listing: String) -> [NFTRuleKey: String] {
        var texts: [NFTRuleKey: String] = [:]
        var family: String?
        var table: String?
        var chain: String?
        for raw in listing.split(separator: "\n") {
            let line = raw.trimmingCharacters(in: .whitespaces)
            let marker = line.range(of: " # handle ")
            let body = marker.map { String(line[..<$0.lowerBound]) } ?? line
            let words = body.split(separator: " ").map(String.init)
            if body.hasSuffix("{") {
                // A block: a table, a chain, or a set, map or flowtable (whose lines are no rules).
                if words.first == "table", words.count >= 3 {
                    family = words[1]
                    table = words[2]
                    chain = nil
                } else {
                    chain = words.first == "chain" && words.count >= 2 ? words[1] : nil
                }
            } else if let marker, let handle = Int(line[marker.upperBound...].trimmingCharacters(in: .whitespaces)),
                      let family, let table, let chain {
                texts[NFTRuleKey(family: family, table: table, chain: chain, handle: handle)] = body
            }
        }
        return texts
    }

    // MARK: - iptables

    /// The rules in `rules` (`iptables -S` or `ip6tables -S` of the filter table; `source` names which) that drop or
    /// reject TCP `port` in the INPUT chain or a chain of its own, and an INPUT policy of DROP with no rule accepting it.
    public static func iptables(_ rules: String, source: String = "iptables", port: Int) -> [Finding] {
        var findings: [Finding] = []
        var accepted = false
        var policyDrop = false
        for raw in rules.split(separator: "\n") {
            let words = raw.split(separator: " ").map(String.init)
            if words.count >= 3, words[0] == "-P", words[1] == "INPUT" {
                policyDrop = words[2] == "DROP"
                continue
            }
            guard words.count >= 2, words[0] == "-A", !["OUTPUT", "FORWARD", "POSTROUTING"].contains(words[1]) else { continue }
            guard let protocolIndex = words.firstIndex(of: "-p"), protocolIndex + 1 < words.count, words[protocolIndex + 1] == "tcp",
                  let target = words.firstIndex(of: "-j").flatMap({ $0 + 1 < words.count ? words[$0 + 1] : nil }) else { continue }
            var matches = false
            for (index, word) in words.enumerated() where (word == "--dport" || word == "--dports" || word == "--destination-port") && index + 1 < words.count {
                let negated = index > 0 && words[index - 1] == "!"
                let inside = words[index + 1].split(separator: ",").contains { part in
                    let bounds = part.split(separator: ":").compactMap { Int($0) }
                    if bounds.count == 2 { return (bounds[0]...max(bounds[0], bounds[1])).contains(port) }
                    return bounds.first == port
                }
                matches = negated ? !inside : inside
            }
            guard matches else { continue }
            switch target {
            case "ACCEPT":
                accepted = true
            case "DROP", "REJECT":
                let rule = words.joined(separator: " ")
                let chain = words[1]
                let command = source == "ip6tables" ? "ip6tables" : "iptables"
                findings.append(Finding(
                    source: source, location: "chain \(chain)", rule: rule, verdict: target.lowercased(),
                    fix: "sudo \(command) -I \(chain) -p tcp --dport \(port) -j ACCEPT (or remove it: sudo \(command) -D \(words.dropFirst().joined(separator: " ")))"
                        + "; to keep it, save the rules (netfilter-persistent save)",
                    isPolicy: false))
            default:
                continue
            }
        }
        if policyDrop, !accepted {
            let command = source == "ip6tables" ? "ip6tables" : "iptables"
            findings.append(Finding(
                source: source, location: "chain INPUT", rule: "-P INPUT DROP", verdict: "drop",
                fix: "sudo \(command) -I INPUT -p tcp --dport \(port) -j ACCEPT; to keep it, save the rules (netfilter-persistent save)",
                isPolicy: true))
        }
        return findings
    }
}
