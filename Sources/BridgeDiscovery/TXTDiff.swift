/// How a TXT record changed between two sightings of a service: keys added, removed and changed.
public struct TXTDiff: Sendable, Hashable, Codable {
    /// One changed key: the value before and after.
    public struct Change: Sendable, Hashable, Codable {
        /// The value before.
        public var old: String
        /// The value after.
        public var new: String
    }

    /// Keys that appeared, with their values.
    public var added: [String: String]
    /// Keys that went, with the values they had.
    public var removed: [String: String]
    /// Keys whose value changed.
    public var changed: [String: Change]

    /// The difference from `old` to `new`.
    public init(old: [String: String], new: [String: String]) {
        added = new.filter { old[$0.key] == nil }
        removed = old.filter { new[$0.key] == nil }
        var changed: [String: Change] = [:]
        for (key, value) in new {
            if let before = old[key], before != value { changed[key] = Change(old: before, new: value) }
        }
        self.changed = changed
    }

    /// Whether nothing changed.
    public var isEmpty: Bool { added.isEmpty && removed.isEmpty && changed.isEmpty }

    /// One line per key, sorted by key: `+ key=value`, `- key=value`, `~ key: old -> new`.
    public var lines: [String] {
        var lines: [(String, String)] = []
        for (key, value) in added { lines.append((key, "+ \(key)=\(value)")) }
        for (key, value) in removed { lines.append((key, "- \(key)=\(value)")) }
        for (key, change) in changed { lines.append((key, "~ \(key): \(change.old) -> \(change.new)")) }
        return lines.sorted { $0.0 < $1.0 }.map(\.1)
    }
}

/// What changed in an `updated` service, for `discover --watch`.
public struct ServiceDiff: Sendable, Hashable {
    /// The TXT record's changes.
    public var txt: TXTDiff
    /// The host before and after, when it changed.
    public var host: (old: String, new: String)? {
        get { hostChange.map { ($0[0], $0[1]) } }
        set { hostChange = newValue.map { [$0.old, $0.new] } }
    }
    /// The port before and after, when it changed.
    public var port: (old: UInt16, new: UInt16)? {
        get { portChange.map { ($0[0], $0[1]) } }
        set { portChange = newValue.map { [$0.old, $0.new] } }
    }
    /// Addresses that appeared.
    public var addressesAdded: [ServiceAddress]
    /// Addresses that went.
    public var addressesRemoved: [ServiceAddress]
    private var hostChange: [String]?
    private var portChange: [UInt16]?

    /// The difference from `old` to `new`.
    public init(old: ResolvedService, new: ResolvedService) {
        txt = TXTDiff(old: old.txt, new: new.txt)
        addressesAdded = new.addresses.filter { !old.addresses.contains($0) }
        addressesRemoved = old.addresses.filter { !new.addresses.contains($0) }
        hostChange = old.hostName == new.hostName ? nil : [old.hostName, new.hostName]
        portChange = old.port == new.port ? nil : [old.port, new.port]
    }

    /// Whether nothing a person would notice changed.
    public var isEmpty: Bool {
        txt.isEmpty && hostChange == nil && portChange == nil && addressesAdded.isEmpty && addressesRemoved.isEmpty
    }

    /// One line per change: TXT keys (see ``TXTDiff/lines``), then host, port and addresses.
    public var lines: [String] {
        var lines = txt.lines
        if let host { lines.append("~ host: \(host.old) -> \(host.new)") }
        if let port { lines.append("~ port: \(port.old) -> \(port.new)") }
        for address in addressesAdded { lines.append("+ address \(address)") }
        for address in addressesRemoved { lines.append("- address \(address)") }
        return lines
    }
}
