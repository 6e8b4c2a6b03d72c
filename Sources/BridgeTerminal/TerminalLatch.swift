import Synchronization

/// Something that happens once (a terminal's output ended), awaited by any number of tasks; those that wait after it
/// happened go on at once.
final class TerminalLatch: Sendable {
    private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    /// Lets every waiter (and every later one) go on; only the first call counts.
    func open() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            guard !state.open else { return [] }
            state.open = true
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Waits until ``open()`` was called.
    ///
    /// Not cut short by cancellation.
    func wait() async {
        await withCheckedContinuation { continuation in
            let isOpen = state.withLock { state -> Bool in
                if state.open { return true }
                state.waiters.append(continuation)
                return false
            }
            if isOpen { continuation.resume() }
        }
    }
}
