import BridgeDiagnostics
import Testing

/// doctor's reading of packet filter rules, from the text nft and iptables print (captured from nft 1.0.6 in a
/// network namespace of its own): which rules keep new connections from the bridge port, named as the tool names them.
@Suite("Firewall rules", .tags(.unit))
struct FirewallRulesTests {
    static let nftJSON = #"""
    {"nftables": [{"metainfo": {"version": "1.0.6", "release_name": "Lester Gooch #5", "json_schema_version": 1}}, {"table": {"family": "inet", "name": "filter", "handle": 1}}, {"chain": {"family": "inet", "table": "filter", "name": "input", "handle": 1, "type": "filter", "hook": "input", "prio": 0, "policy": "accept"}}, {"rule": {"family": "inet", "table": "filter", "chain": "input", "handle": 2, "expr": [{"match": {"op": "==", "left": {"meta": {"key": "iifname"}}, "right": "lo"}}, {"accept": null}]}}, {"rule": {"family": "inet", "table": "filter", "chain": "input", "handle": 3, "expr": [{"match": {"op": "==", "left": {"meta": {"key": "iifname"}}, "right": "eth0"}}, {"match": {"op": "==", "left": {"payload": {"protocol": "tcp", "field": "dport"}}, "right": 9099}}, {"drop": null}]}}, {"rule": {"family": "inet", "table": "filter", "chain": "input", "handle": 5, "expr": [{"match": {"op": "==", "left": {"payload": {"protocol": "tcp", "field": "dport"}}, "right": {"set": [22, 9099]}}}, {"counter": {"packets": 0, "bytes": 0}}, {"reject": {"type": "icmpx", "expr": "port-unreachable"}}]}}, {"rule": {"family": "inet", "table": "filter", "chain": "input", "handle": 6, "expr": [{"match": {"op": "!=", "left": {"payload": {"protocol": "tcp", "field": "dport"}}, "right": 9099}}, {"drop": null}]}}, {"table": {"family": "ip", "name": "other", "handle": 2}}, {"chain": {"family": "ip", "table": "other", "name": "out", "handle": 1, "type": "filter", "hook": "output", "prio": 0, "policy": "accept"}}, {"rule": {"family": "ip", "table": "other", "chain": "out", "handle": 2, "expr": [{"match": {"op": "==", "left": {"payload": {"protocol": "tcp", "field": "dport"}}, "right": 9099}}, {"drop": null}]}}]}
    """#
    static let nftListing = """
    table inet filter { # handle 1
    	chain input { # handle 1
    		type filter hook input priority filter; policy accept;
    		iifname "lo" accept # handle 2
    		iifname "eth0" tcp dport 9099 drop # handle 3
    		tcp dport { 22, 9099 } counter packets 0 bytes 0 reject # handle 5
    		tcp dport != 9099 drop # handle 6
    	}
    }
    table ip other { # handle 2
    	chain out { # handle 1
    		type filter hook output priority filter; policy accept;
    		tcp dport 9099 drop # handle 2
    	}
    }
    """

    @Test("nftables: a drop and a reject of port 9099 on the input hook are named with their text and handle; the output hook and other ports are not")
    func nftablesRules() {
        let found = FirewallRules.nftables(json: Self.nftJSON, listing: Self.nftListing, port: 9099)
        #expect(found.map(\.rule) == [#"iifname "eth0" tcp dport 9099 drop"#, "tcp dport { 22, 9099 } counter packets 0 bytes 0 reject"])
        #expect(found.map(\.verdict) == ["drop", "reject"])
        #expect(found.first?.location == "table inet filter, chain input (handle 3)")
        #expect(found.first?.fix.hasPrefix("sudo nft insert rule inet filter input tcp dport 9099 accept") == true)
        #expect(found.first?.fix.contains("sudo nft delete rule inet filter input handle 3") == true)
        #expect(found.allSatisfy { !$0.isPolicy })
        // Port 22 is caught by the set and by 'dport != 9099'; nothing of the output chain is.
        #expect(FirewallRules.nftables(json: Self.nftJSON, listing: Self.nftListing, port: 22).map(\.rule)
            == ["tcp dport { 22, 9099 } counter packets 0 bytes 0 reject", "tcp dport != 9099 drop"])
        #expect(FirewallRules.nftables(json: Self.nftJSON, listing: Self.nftListing, port: 9100).map(\.rule) == ["tcp dport != 9099 drop"])
    }

    static let policyJSON = #"""
    {"nftables": [{"metainfo": {"version": "1.0.6", "release_name": "Lester Gooch #5", "json_schema_version": 1}}, {"table": {"family": "inet", "name": "fw", "handle": 1}}, {"set": {"family": "inet", "name": "blocked", "table": "fw", "type": "inet_service", "handle": 1, "flags": ["interval"], "elem": [{"range": [9000, 9100]}]}}, {"chain": {"family": "inet", "table": "fw", "name": "input", "handle": 2, "type": "filter", "hook": "input", "prio": 0, "policy": "drop"}}, {"rule": {"family": "inet", "table": "fw", "chain": "input", "handle": 3, "expr": [{"match": {"op": "==", "left": {"payload": {"protocol": "tcp", "field": "dport"}}, "right": 22}}, {"accept": null}]}}, {"rule": {"family": "inet", "table": "fw", "chain": "input", "handle": 4, "expr": [{"match": {"op": "==", "left": {"payload": {"protocol": "ip", "field": "saddr"}}, "right": {"prefix": {"addr": "198.18.0.0", "len": 24}}}}, {"match": {"op": "==", "left": {"payload": {"protocol": "tcp", "field": "dport"}}, "right": "@blocked"}}, {"drop": null}]}}]}
    """#
    static let policyListing = """
    table inet fw { # handle 1
    	set blocked { # handle 1
    		type inet_service
    		flags interval
    		elements = { 9000-9100 }
    	}

    	chain input { # handle 2
    		type filter hook input priority filter; policy drop;
    		tcp dport 22 accept # handle 3
    		ip saddr 198.18.0.0/24 tcp dport @blocked drop # handle 4
    	}
    }
    """

    @Test("nftables: a named set's range holds the port; an input policy of drop with no rule accepting the port is a finding, not when a rule accepts it")
    func nftablesPolicyAndSets() {
        let found = FirewallRules.nftables(json: Self.policyJSON, listing: Self.policyListing, port: 9099)
        #expect(found.count == 2)
        #expect(found.first?.rule == "ip saddr 198.18.0.0/24 tcp dport @blocked drop")
        #expect(found.last?.isPolicy == true && found.last?.location == "table inet fw, chain input")
        #expect(found.last?.fix.hasPrefix("sudo nft add rule inet fw input tcp dport 9099 accept") == true)
        #expect(FirewallRules.nftables(json: Self.policyJSON, listing: Self.policyListing, port: 22).isEmpty, "port 22 is accepted")
        #expect(FirewallRules.nftables(json: "", listing: "", port: 9099).isEmpty)
        #expect(FirewallRules.nftables(json: #"{"nftables": [{"metainfo": {}}]}"#, listing: "", port: 9099).isEmpty)
    }

    @Test("iptables -S: DROP and REJECT of the port (single, list, range) in INPUT are found, negation and OUTPUT are not; -P INPUT DROP without an ACCEPT is")
    func iptablesRules() {
        let rules = """
        -P INPUT ACCEPT
        -P FORWARD ACCEPT
        -P OUTPUT ACCEPT
        -A INPUT -i lo -j ACCEPT
        -A INPUT -i eth0 -p tcp -m tcp --dport 9099 -j DROP
        -A INPUT -p tcp -m multiport --dports 22,9000:9100 -j REJECT --reject-with icmp-port-unreachable
        -A INPUT -p tcp -m tcp ! --dport 9099 -j DROP
        -A OUTPUT -p tcp -m tcp --dport 9099 -j DROP
        """
        let found = FirewallRules.iptables(rules, port: 9099)
        #expect(found.map(\.rule) == ["-A INPUT -i eth0 -p tcp -m tcp --dport 9099 -j DROP",
                                      "-A INPUT -p tcp -m multiport --dports 22,9000:9100 -j REJECT --reject-with icmp-port-unreachable"])
        #expect(found.first?.fix.hasPrefix("sudo iptables -I INPUT -p tcp --dport 9099 -j ACCEPT") == true)
        #expect(found.first?.fix.contains("sudo iptables -D INPUT -i eth0 -p tcp -m tcp --dport 9099 -j DROP") == true)
        let closed = "-P INPUT DROP\n-A INPUT -p tcp -m tcp --dport 22 -j ACCEPT\n"
        #expect(FirewallRules.iptables(closed, source: "ip6tables", port: 9099).map(\.rule) == ["-P INPUT DROP"])
        #expect(FirewallRules.iptables(closed, source: "ip6tables", port: 9099).first?.fix.hasPrefix("sudo ip6tables -I INPUT") == true)
        #expect(FirewallRules.iptables(closed + "-A INPUT -p tcp -m tcp --dport 9099 -j ACCEPT\n", port: 9099).isEmpty)
    }
}
