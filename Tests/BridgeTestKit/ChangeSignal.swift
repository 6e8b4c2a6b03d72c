import Synchronization

/// Tells waiting tasks that something changed (a frame arrived, a log line was written, a task began to sleep on a
/// clock), so a test waits for the event it expects instead of sleeping and looking again.
///
/// Each change moves a version on; a waiter says which version it saw, so a change between its look and its wait
/// is never missed.
public final class ChangeSignal: Sendable {
    private struct State {
        var version: UInt64 = 0
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var nextID: UInt64 = 0
        /// Waits cancelled before they parked.
        var cancelled: Set<UInt64> = []
    }

    private let state = Mutex(State())

    /// A signal nothing has changed yet.
    public init() {}

    /// The number of changes so far: read it, look at what you wait for, then ``wait(after:until:)``.
    public var version: UInt64 { state.withLock { $0.version } }

    /// Wakes every waiter: something changed.
    public func notify() {
        let waiters = state.withLock { state in
            state.version += 1
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Waits until a change after `version` (at once if there was one already), or until `deadline` of real time
    /// passes, or the task is cancelled.
    ///
    /// True if something changed.
    public func wait(after version: UInt64, until deadline: ContinuousClock.Instant) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask { await self.changed(after: version) }
            // The bound: a wait that never ends would hang the whole test run, which is worse than any failure.
            group.addTask {
                try? await ContinuousClock().sleep(until: deadline)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first || self.version != version
        }
    }

    /// Waits, within `timeout` of real time, until `condition` holds (checked now and after every change); false if
    /// it still does not at the end.
    public func wait(timeout: Duration, for condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while true {
            let seen = version
            if condition() { return true }
            guard ContinuousClock.now < deadline, !Task.isCancelled else { return false }
            _ = await wait(after: seen, until: deadline)
        }
    }

    /// Returns on the first change after `version`; false if the task was cancelled first.
    private func changed(after version: UInt64) async -> Bool {
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    if state.cancelled.remove(id) != nil || state.version != version { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if now { continuation.resume() }
            }
            return state.withLock { state in
                state.cancelled.remove(id)
                return state.version != version
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                if let waiter = state.waiters.removeValue(forKey: id) { return waiter }
                // Not parked yet (or woken already): a wait that parks later finds itself cancelled.
                state.cancelled.insert(id)
                return nil
            }
            waiter?.resume()
        }
    }
}
