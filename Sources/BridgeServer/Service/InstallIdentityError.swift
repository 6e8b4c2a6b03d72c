/// Why the installation id could not be read or made.
public enum InstallIdentityError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The state directory cannot be created or written (`reason` says why); choose another one.
    case unusableStateDirectory(path: String, reason: String)

    /// What went wrong and what to do.
    public var description: String {
        switch self {
        case .unusableStateDirectory(let path, let reason):
            return "cannot use the state directory \(path): \(reason). Choose another state directory."
        }
    }
}
