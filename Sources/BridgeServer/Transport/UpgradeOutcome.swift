import BridgePairing
import Synchronization

/// What the upgrade check learned about a WebSocket request, handed from `shouldUpgrade` to the connection
/// (the request context is copied between the two; this box is shared).
final class UpgradeOutcome: Sendable {
    private let state = Mutex<AuthenticatedDevice?>(nil)

    /// The paired device the upgrade authenticated as, if any.
    var device: AuthenticatedDevice? {
        get { state.withLock { $0 } }
        set { state.withLock { $0 = newValue } }
    }
}
