import BridgeSessionStore
import Foundation
import Logging

extension BridgeService {
    /// Opens the session store in the state directory.
    ///
    /// A database that cannot be used (not SQLite, damaged, another program's) is reported as an error naming where
    /// it was moved, and the bridge starts with no stored sessions.
    static func openSessionStore(stateDirectory: URL, logger: Logger) throws(SessionStoreError) -> SessionStore {
        let store = try SessionStore(directory: stateDirectory, logger: logger)
        if let recovery = store.recovery {
            logger.error("the session database cannot be used; moved it aside and starting with no stored sessions", metadata: [
                "path": "\(recovery.path)", "movedTo": "\(recovery.movedTo)", "reason": "\(recovery.reason)",
            ])
        }
        return store
    }
}
