import Foundation

/// Runs `body`, which blocks (a socket read, a process to wait for, a decoder that starts slowly), on a thread of its
/// own, and returns what it returned.
///
/// Not on the cooperative pool (two threads on a 2-core machine): blocked there, it stalled every other test's tasks in
/// full runs. Not on a dispatch queue either: on Linux the Swift runtime's global executor runs on dispatch's global
/// queues, so a call blocked there for seconds holds one of the threads the tasks need.
public func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}
