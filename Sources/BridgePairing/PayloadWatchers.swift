import BridgePairingWire
import Foundation
import Synchronization

/// The streams of ``PairingSession/changes()``, behind a lock rather than on the actor, so a stream that ends removes
/// itself at once from its `onTermination` (synchronous), with no task to hop onto the actor.
final class PayloadWatchers: Sendable {
    private let watchers = Mutex<[UUID: AsyncStream<PairingPayload>.Continuation]>([:])

    /// Adds `continuation` under `id`.
    func add(_ id: UUID, _ continuation: AsyncStream<PairingPayload>.Continuation) {
        watchers.withLock { $0[id] = continuation }
    }

    /// Removes the stream `id`.
    func remove(_ id: UUID) {
        _ = watchers.withLock { $0.removeValue(forKey: id) }
    }

    /// Whether no stream watches.
    var isEmpty: Bool { watchers.withLock { $0.isEmpty } }

    /// Gives `payload` to every stream.
    func announce(_ payload: PairingPayload) {
        for watcher in watchers.withLock({ Array($0.values) }) { watcher.yield(payload) }
    }
}
