/// Why the bridge server could not run.
public enum BridgeServerError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The port is taken by another program: `holder` when it can be seen (``PortHolder/listening(on:proc:)``).
    case portInUse(host: String, port: Int, holder: PortHolder? = nil)
    /// The port needs privileges the process does not have.
    case portNotPermitted(host: String, port: Int)
    /// The working directory does not exist or is not a directory.
    case badWorkingDirectory(String)
    /// The directory the file scope needs (the home directory for `home`) cannot be opened; `nil` when none is known.
    case badFileScopeDirectory(scope: String, directory: String?)
    /// An allowed network is not in CIDR notation.
    case badNetwork(String)
    /// Binding failed for another reason.
    case bindFailed(host: String, port: Int, reason: String)

    /// What went wrong and what to do, in the library's words: no command-line flag (the CLI names its flags).
    public var description: String {
        switch self {
        case .portInUse(let host, let port, let holder?) where holder.isBridge:
            let stop = holder.systemdUnit.map { "'systemctl stop \($0)' (or 'systemctl --user stop \($0)')" } ?? "stop it"
            return "port \(port) on \(host) is already in use by another oa-bridge: \(holder). It is serving already: "
                + "'oa-bridge pair' shows its pairing code. To run this one instead, \(stop) or choose another port"
        case .portInUse(let host, let port, let holder?):
            return "port \(port) on \(host) is already in use by \(holder); stop it or choose another port"
        case .portInUse(let host, let port, nil):
            return "port \(port) on \(host) is already in use by another program; stop it or choose another port"
        case .portNotPermitted(let host, let port):
            return "not allowed to listen on port \(port) on \(host) (ports below 1024 need privileges); choose a port of 1024 or above"
        case .badWorkingDirectory(let path):
            return "the working directory \(path) does not exist or is not a directory; choose an existing one"
        case .badFileScopeDirectory(let scope, let directory):
            return "the file scope '\(scope)' needs the directory \(directory ?? "(no home directory known)"), which cannot be opened; "
                + "set HOME to an existing directory or choose another file scope"
        case .badNetwork(let text):
            return "'\(text)' is not a network in CIDR notation; write it like 192.168.1.0/24 or fd00::/64"
        case .bindFailed(let host, let port, let reason):
            return "could not listen on \(host):\(port): \(reason); check the address to listen on, or choose another port"
        }
    }
}
