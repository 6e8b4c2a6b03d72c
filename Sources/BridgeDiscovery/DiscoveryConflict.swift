import Foundation

/// A naming problem seen while browsing, with what it means and how to fix it.
public enum DiscoveryConflict: Sendable, Hashable {
    /// One instance name answered by more than one host: phones reach whichever answered last.
    case sharedName(instance: ServiceInstance, hosts: [String])
    /// `Desk #2` is `Desk` renamed by its mDNS daemon because another service already held `Desk`.
    case renamedAfterCollision(original: String, renamed: ServiceInstance, originalHost: String, renamedHost: String)
    /// A host's service keeps being renamed (`Desk`, `Desk #2`, `Desk #3`, …): its daemon keeps finding the name taken.
    case keepsRenaming(base: String, host: String, names: [String])

    /// A short kind for JSON: `shared_name`, `renamed_after_collision`, `keeps_renaming`.
    public var kind: String {
        switch self {
        case .sharedName: return "shared_name"
        case .renamedAfterCollision: return "renamed_after_collision"
        case .keepsRenaming: return "keeps_renaming"
        }
    }

    /// The instance names involved.
    public var names: [String] {
        switch self {
        case .sharedName(let instance, _): return [instance.name]
        case .renamedAfterCollision(let original, let renamed, _, _): return [original, renamed.name]
        case .keepsRenaming(_, _, let names): return names
        }
    }

    /// What happened, in a sentence or two.
    public var explanation: String {
        switch self {
        case .sharedName(let instance, let hosts):
            return "two hosts claim the service name '\(instance.name)' (\(hosts.joined(separator: ", "))): phones reach whichever answered last. "
                + "It happens when both published at the same moment, or when a reflector, VPN or bridge joins two networks that each had one."
        case .renamedAfterCollision(let original, let renamed, let originalHost, let renamedHost):
            if originalHost == renamedHost {
                return "'\(renamed.name)' is '\(original)' renamed by the mDNS daemon on \(renamedHost): two services on that machine were given the name '\(original)'."
            }
            return "'\(renamed.name)' (on \(renamedHost)) is '\(original)' renamed by its mDNS daemon because \(originalHost) already holds '\(original)': "
                + "two bridges were given the same name, and a phone paired with one may find the other."
        case .keepsRenaming(let base, let host, let names):
            return "the service '\(base)' on \(host) has been renamed \(names.count - 1) times (\(names.joined(separator: ", "))): its daemon keeps finding its own name taken. "
                + "Usually the machine hears its own announcements back (two interfaces on one network, an mDNS reflector, a VPN bridging the LAN) or another device keeps claiming the name."
        }
    }

    /// The `oa-bridge serve` setting a conflict's fix changes.
    ///
    /// The library says what to change in words; the command line names the flag (issue 31 item 5).
    public enum Setting: Sendable, Hashable {
        /// The service's instance name, with a name to give it when there is one to suggest.
        case name(suggested: String?)
        /// The network interface the bridge announces on.
        case interface
    }

    /// The settings ``fix`` is about, in the order it mentions them.
    public var settings: [Setting] {
        switch self {
        case .sharedName(let instance, _):
            return [.name(suggested: "\(instance.name) 2"), .interface]
        case .renamedAfterCollision(let original, _, let originalHost, let renamedHost):
            if originalHost == renamedHost { return [.name(suggested: nil)] }
            return [.name(suggested: "\(original) (\(renamedHost.split(separator: ".").first.map(String.init) ?? renamedHost))")]
        case .keepsRenaming(let base, _, _):
            return [.interface, .name(suggested: "\(base) desk")]
        }
    }

    /// What to do about it, in words: the settings it changes are ``settings``.
    public var fix: String {
        switch self {
        case .sharedName:
            return "give each bridge its own name on one of them; if it is one machine on two networks, announce on one interface"
        case .renamedAfterCollision(_, _, let originalHost, let renamedHost):
            if originalHost == renamedHost {
                return "stop the second 'oa-bridge serve' on \(renamedHost), or give it another name"
            }
            return "give the bridge on \(renamedHost) its own name"
        case .keepsRenaming:
            return "announce on one interface, turn off reflection ('enable-reflector=no' in "
                + "/etc/avahi/avahi-daemon.conf, then 'sudo systemctl restart avahi-daemon'), or pick a name no other device uses"
        }
    }

    /// The conflict for people: `conflict: <explanation>` and an indented `fix: <fix>` line.
    public var text: String { text(fix: fix) }

    /// The conflict for people with the caller's fix (the command line adds the flags of ``settings`` to ``fix``).
    public func text(fix: String) -> String { "conflict: \(explanation)\n  fix: \(fix)" }

    /// Splits `Desk #2` into `("Desk", 2)`; `nil` for a name without Avahi's ` #N` suffix.
    public static func renamedBase(of name: String) -> (base: String, number: Int)? {
        guard let hash = name.range(of: " #", options: .backwards) else { return nil }
        let digits = name[hash.upperBound...]
        guard !digits.isEmpty, digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber), let number = Int(digits), number >= 2 else { return nil }
        let base = String(name[..<hash.lowerBound])
        return base.isEmpty ? nil : (base, number)
    }
}
