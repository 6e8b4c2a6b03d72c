import Synchronization

/// A continuation resumed by whichever of several racers comes first (a thread-pool job, a timer, cancellation);
/// later resumes do nothing.
///
/// ``isDone`` lets the losers stop early.
final class OneShotContinuation<Value: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Value, Never>?
        var done = false
    }

    private let state = Mutex(State())

    /// Sets the continuation to resume; call it before handing the object to any racer.
    func arm(_ continuation: CheckedContinuation<Value, Never>) {
        state.withLock { $0.continuation = continuation }
    }

    /// Resumes with `value` if nobody did yet.
    func resume(_ value: Value) {
        let continuation = state.withLock { state -> CheckedContinuation<Value, Never>? in
            guard !state.done else { return nil }
            state.done = true
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume(returning: value)
    }

    /// Whether someone resumed it already.
    var isDone: Bool { state.withLock { $0.done } }
}
