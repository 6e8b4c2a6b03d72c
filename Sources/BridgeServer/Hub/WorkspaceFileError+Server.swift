import BridgeWorkspace

extension WorkspaceFileError {
    /// Why the bridge cannot start with this workspace (its working directory, or the `--fs-scope` directory).
    func serverError(workingDirectory: String) -> BridgeServerError {
        if case .missingScopeDirectory(let scope, let directory) = self {
            return .badFileScopeDirectory(scope: scope.rawValue, directory: directory)
        }
        return .badWorkingDirectory(workingDirectory)
    }
}
