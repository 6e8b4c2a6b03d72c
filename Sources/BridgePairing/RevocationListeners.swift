import Synchronization

/// The open ``TokenStore/revocationEvents(pollingEvery:)`` streams of one store, told at once about revocations made
/// through that store (so a revocation in this process closes sockets without waiting for the next poll).
final class RevocationListeners: Sendable {
    private struct State {
        var next: UInt64 = 0
        var continuations: [UInt64: AsyncStream<TokenRevocation>.Continuation] = [:]
    }

    private let state = Mutex(State())

    /// Registers `continuation`; returns the key to remove it with.
    func add(_ continuation: AsyncStream<TokenRevocation>.Continuation) -> UInt64 {
        state.withLock { state in
            state.next += 1
            state.continuations[state.next] = continuation
            return state.next
        }
    }

    /// Forgets the stream registered under `key`.
    func remove(_ key: UInt64) {
        _ = state.withLock { $0.continuations.removeValue(forKey: key) }
    }

    /// Tells every registered stream about `revocations`.
    func publish(_ revocations: [TokenRevocation]) {
        guard !revocations.isEmpty else { return }
        let continuations = state.withLock { Array($0.continuations.values) }
        for continuation in continuations {
            for revocation in revocations { continuation.yield(revocation) }
        }
    }
}
