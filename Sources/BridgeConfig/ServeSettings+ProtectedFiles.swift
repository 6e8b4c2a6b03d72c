import BridgePairing
public import BridgeSandbox
public import Foundation

extension ServeSettings {
    /// The bridge's own files, out of every `--fs-scope` and every terminal: the state directory (TLS key, pairing
    /// database, install id), and the config file's directory when it is the default location (made if missing, so
    /// the agent cannot write a config.yaml there; not where the home directory itself is missing), else the config
    /// file itself when it exists.
    /// - Throws: ``ConfigError/unsupported(_:)`` saying which cannot be made or opened.
    public func protectedFiles(environment: [String: String] = ProcessInfo.processInfo.environment) throws(ConfigError) -> ProtectedFiles {
        var directories = [StateDirectory.resolve(override: stateDir.value, environment: environment).path]
        var files: [String] = []
        if configPath == ConfigFile.defaultPath(environment: environment) {
            let directory = (configPath as NSString).deletingLastPathComponent
            // Made where the home directory exists (`~/.config/oa-bridge`); a home that is missing is not made.
            let home = ((directory as NSString).deletingLastPathComponent as NSString).deletingLastPathComponent
            if FileManager.default.fileExists(atPath: home) { directories.append(directory) }
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
