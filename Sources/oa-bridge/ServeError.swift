/// Errors `oa-bridge serve` reports before starting, with what to do about them.
enum ServeError: Error, CustomStringConvertible {
    case stateDirectory(path: String, reason: String)

    var description: String {
        switch self {
        case .stateDirectory(let path, let reason):
            return "cannot use the state directory \(path): \(reason). Choose another with --state-dir."
        }
    }
}
