import ArgumentParser
import BridgeServer

/// `--fs-scope workspace|home|any`.
extension WorkspaceScope: ExpressibleByArgument {}
