public import GRDB

/// One session the bridge keeps across restarts (table `session`).
///
/// JSON values are stored as their text.
public struct StoredSessionRow: Sendable, Equatable, Codable, FetchableRecord, PersistableRecord {
    /// The table's name.
    public static let databaseTableName = "session"

    /// The session id the phones use.
    public var id: String
    /// The agent's id for the session (the same as ``id`` today: the bridge passes the agent's id on).
    public var agentSessionId: String
    /// The session's working directory (a real path).
    public var cwd: String
    /// Its `additionalDirectories`, a JSON array of real paths.
    public var additionalDirectories: String
    /// Its title, from the agent's `session_info_update`.
    public var title: String?
    /// The paired device whose connection created it (auth on).
    public var deviceId: String?
    /// The last `modes` the agent reported (JSON text).
    public var modes: String?
    /// The last `models` the agent reported (JSON text).
    public var models: String?
    /// The last `configOptions` (JSON text).
    public var configOptions: String?
    /// The agent's last `_meta` (JSON text).
    public var agentMeta: String?
    /// The `_meta.seq` the session's next update gets.
    public var nextSeq: Int64
    /// The highest `seq` the session may have handed out (``SessionStoreChange/reserveSeq(session:through:)``): above
    /// ``nextSeq`` - 1 only after a bridge that did not stop cleanly (0 after a clean stop).
    public var seqReserved: Int64 = 0
    /// Whether it was restored read-only (the agent restarted and could not load it).
    public var readOnly: Bool
    /// When it was created (seconds since 1970).
    public var createdAt: Double
    /// When it last changed (seconds since 1970).
    public var updatedAt: Double

    /// A row; every optional value may be left out.
    public init(
        id: String, agentSessionId: String, cwd: String, additionalDirectories: String = "[]", title: String? = nil,
        deviceId: String? = nil, modes: String? = nil, models: String? = nil, configOptions: String? = nil,
        agentMeta: String? = nil, nextSeq: Int64 = 1, seqReserved: Int64 = 0, readOnly: Bool = false, createdAt: Double,
        updatedAt: Double
    ) {
        self.id = id
        self.agentSessionId = agentSessionId
        self.cwd = cwd
        self.additionalDirectories = additionalDirectories
        self.title = title
        self.deviceId = deviceId
        self.modes = modes
        self.models = models
        self.configOptions = configOptions
        self.agentMeta = agentMeta
        self.nextSeq = nextSeq
        self.seqReserved = seqReserved
        self.readOnly = readOnly
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}
