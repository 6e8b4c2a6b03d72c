import NIOCore
import Synchronization

/// Sends the close frame the hub queued for a connection (``OutboundQueue/attach(_:onClose:)``), from a task started
/// only when there is a close to send, and closes the connection if the peer has not answered within
/// ``ClientConnection/closeTimeout`` of the close going out (a timer on the connection's event loop).
///
/// ``end()`` (the connection ended) stops a close still under way and its timer. Generic over its target so that the
/// target is stored inline (one allocation per connection).
final class ConnectionCloser<Target: ConnectionCloseTarget>: Sendable {
    private struct State {
        var task: Task<Void, Never>?
        var timeout: Scheduled<Void>?
        var ended = false
    }

    private let target: Target
    private let closeTimeout: Duration
    private let state = Mutex(State())

    /// A closer of `target` that waits `closeTimeout` for the peer's answer.
    init(_ target: Target, closeTimeout: Duration = ClientConnection.closeTimeout) {
        self.target = target
        self.closeTimeout = closeTimeout
    }

    /// Starts sending the close (once; not after ``end()``).
    func send(_ kind: OutboundFrame.CloseKind, _ reason: String) {
        state.withLock { state in
            guard !state.ended, state.task == nil else { return }
            state.task = Task { await self.close(kind, reason) }
        }
    }

    private func close(_ kind: OutboundFrame.CloseKind, _ reason: String) async {
        do {
            try await target.sendClose(kind, reason)
        } catch {
            // Not written (the connection is going, or was cancelled): close it now.
            if !Task.isCancelled { target.closeConnection() }
            return
        }
        // The reader ends when the peer answers; a peer that does not is closed.
        let target = self.target
        let timeout = target.eventLoop.scheduleTask(in: TimeAmount(closeTimeout)) { target.closeConnection() }
        let ended = state.withLock { state in
            if !state.ended { state.timeout = timeout }
            return state.ended
        }
        if ended { timeout.cancel() } else { target.closeTimeoutArmed() }
    }

    /// Whether a close went out and its timer waits for the peer's answer.
    var waitsForAnswer: Bool {
        state.withLock { $0.timeout != nil }
    }

    /// The connection ended: a close under way (being sent, or waiting for the peer's answer) is stopped.
    func end() {
        let (task, timeout) = state.withLock { state in
            state.ended = true
            defer {
                state.task = nil
                state.timeout = nil
            }
            return (state.task, state.timeout)
        }
        task?.cancel()
        timeout?.cancel()
    }
}
