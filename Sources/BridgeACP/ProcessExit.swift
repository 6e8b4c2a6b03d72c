import Synchronization

/// The end of a child process, told once by its termination handler and awaited by the agent's run loop.
final class ProcessExit: Sendable {
    private struct State {
        var reason: String?
        var waiters: [CheckedContinuation<String, Never>] = []
    }

    private let state = Mutex(State())

    /// Why the process ended, once it has.
    var reason: String? { state.withLock { $0.reason } }

    /// Records why the process ended and wakes whoever waits; only the first call counts.
    func ended(reason: String) {
        let waiters = state.withLock { state -> [CheckedContinuation<String, Never>] in
            guard state.reason == nil else { return [] }
            state.reason = reason
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: reason) }
    }

    /// Waits until the process has ended and returns why. Cancellation does not cut the wait short: a stopped
    /// process still has to go.
    func wait() async -> String {
        await withCheckedContinuation { continuation in
            let known = state.withLock { state -> String? in
                if let reason = state.reason { return reason }
                state.waiters.append(continuation)
                return nil
            }
            if let known { continuation.resume(returning: known) }
        }
    }
}
