public import ArgumentParser
import BridgeServer
import BridgeWorkspace

/// `--fs-scope workspace|home|any`.
extension WorkspaceScope: ExpressibleByArgument {}
