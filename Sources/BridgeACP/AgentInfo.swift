public import BridgeRPC

/// An implementation's name, title and version, as in ACP's `agentInfo` / `clientInfo`.
public struct AgentInfo: Sendable, Hashable {
    /// A short machine name.
    public var name: String
    /// A human-readable title.
    public var title: String
    /// The version.
    public var version: String

    /// Creates an info record.
    public init(name: String, title: String, version: String) {
        self.name = name
        self.title = title
        self.version = version
    }

    /// `{"name":…, "title":…, "version":…}`.
    public var jsonValue: JSONValue {
        ["name": .string(name), "title": .string(title), "version": .string(version)]
    }
}
