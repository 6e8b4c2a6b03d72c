import BridgePairing
import BridgeSandbox
import Foundation

extension ServeSettings {
    /// The bridge's own files, out of every `--fs-scope` and every terminal: the state directory (TLS key, pairing
    /// database, install id), and the config file's directory when it is the default location (made if missing, so
    /// the agent cannot write a config.yaml there), else the config file itself when it exists.
    /// - Throws: ``ConfigError/unsupported(_:)`` saying which cannot be made or opened.
    public func protectedFiles(environment: [String: String] = ProcessInfo.processInfo.environment) throws(ConfigError) -> ProtectedFiles {
        var directories = [StateDirectory.resolve(override: stateDir.value, environment: environment).path]
        var files: [String] = []
        if configPath == ConfigFile.defaultPath(environment: environment) {
            directories.append((configPath as NSString).deletingLastPathComponent)
        } else if configExists {
            files.append(configPath)
        }
        do {
            return try ProtectedFiles(directories: directories, files: files)
        } catch {
            throw .unsupported(error.description)
        }
    }
}
