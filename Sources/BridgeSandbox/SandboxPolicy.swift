/// What a confined command may reach: directories (and files) it may read, ones it may also write, and the bridge's
/// own files, which it may reach in neither way even beneath a directory it may write.
public struct SandboxPolicy: Sendable {
    /// A directory or file of the policy: a descriptor the caller holds (a workspace's directory, opened without
    /// following links out of it: no path to race on), or a path (the system's directories).
    public enum Root: Sendable, Hashable {
        /// A descriptor the caller keeps open while the ruleset is built.
        case descriptor(Int32, name: String)
        /// A path, opened (following symbolic links: `/bin` → `usr/bin`) when the ruleset is built; skipped when missing.
        case path(String)

        /// The path or name, for messages.
        public var name: String {
            switch self {
            case .descriptor(_, let name): return name
            case .path(let path): return path
            }
        }
    }

    /// Directories and files readable (and executable) beneath.
    public var readable: [Root]
    /// Directories and files writable beneath (create, remove, rename too).
    public var writable: [Root]
    /// Device files read and written but never created or removed (`/dev/null`).
    public var devices: [Root]
    /// The bridge's own files: no rule reaches them (see ``LandlockRuleset``).
    public var protected: ProtectedFiles

    /// A policy of its parts.
    public init(readable: [Root] = [], writable: [Root], devices: [Root] = [], protected: ProtectedFiles) {
        self.readable = readable
        self.writable = writable
        self.devices = devices
        self.protected = protected
    }

    /// What a shell and common tools read: programs, libraries, `/etc`, `/proc`, `/sys`, `/run` (`resolv.conf`).
    public static let systemReadable: [Root] = [
        "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/run", "/proc", "/sys",
    ].map(Root.path)

    /// The devices a shell writes to: `/dev/null`, `/dev/zero`, `/dev/full`, `/dev/tty`; `/dev/random` and
    /// `/dev/urandom` are read.
    public static let systemDevices: [Root] = ["/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/random", "/dev/urandom"].map(Root.path)

    /// The agent's policy under `--sandbox-agent`: the system's directories and devices and `installation` (see
    /// ``AgentInstallation``) read, `writable` (the working directory, the `--fs-scope` directory, its temporary
    /// directory) read and written, never `protected`.
    public static func agent(writable: [Root], installation: [String], protected: ProtectedFiles) -> SandboxPolicy {
        SandboxPolicy(readable: systemReadable + installation.map(Root.path), writable: writable, devices: systemDevices, protected: protected)
    }

    /// A terminal's policy: the system's directories and devices, plus `writable` (its session's directories and the
    /// `--fs-scope` directory).
    public static func terminal(writable: [Root], protected: ProtectedFiles) -> SandboxPolicy {
        SandboxPolicy(readable: systemReadable, writable: writable, devices: systemDevices, protected: protected)
    }
}
