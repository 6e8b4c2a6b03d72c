/// One line of `oa-bridge doctor`: what was checked, how it went, and what to do about it.
public struct DoctorCheck: Sendable, Hashable, Codable {
    /// How a check went, worst last.
    public enum Status: String, Sendable, Hashable, Codable, Comparable {
        case ok
        case warn
        case fail

        private var rank: Int {
            switch self {
            case .ok: return 0
            case .warn: return 1
            case .fail: return 2
            }
        }

        /// Orders statuses by how bad they are, so the worst of several checks is their `max()`.
        public static func < (lhs: Status, rhs: Status) -> Bool { lhs.rank < rhs.rank }
    }

    /// A short name, for example `avahi-daemon`.
    public var name: String
    /// The result.
    public var status: Status
    /// What was found.
    public var detail: String
    /// What to do about a warning or failure.
    public var fix: String?
    /// The setting of `serve` the fix is about, whose flag the command line adds to ``fix``.
    public var setting: DoctorSetting?

    /// Creates a check result.
    public init(name: String, status: Status, detail: String, fix: String? = nil, setting: DoctorSetting? = nil) {
        self.name = name
        self.status = status
        self.detail = detail
        self.fix = fix
        self.setting = setting
    }
}
