import BridgeWorkspace
import Foundation
import Testing
@testable import BridgeServer

/// What the bridge makes of `--fs-scope`: its configuration's default and the error that stops it (the scopes
/// themselves are tested in BridgeWorkspaceTests).
@Suite("--fs-scope in the bridge's configuration and errors", .tags(.unit))
struct FileScopeServerTests {
    @Test("the configuration's default is the workspace")
    func defaultScope() {
        #expect(BridgeServerConfiguration(serverName: "t").fileScope == .workspace)
    }

    @Test("home without a home directory that opens stops the bridge with an error that names the scope")
    func missingHome() {
        let error = WorkspaceFileError.missingScopeDirectory(scope: .home, directory: "/nowhere")
        #expect(error.serverError(workingDirectory: NSTemporaryDirectory()) == .badFileScopeDirectory(scope: "home", directory: "/nowhere"))
    }
}
