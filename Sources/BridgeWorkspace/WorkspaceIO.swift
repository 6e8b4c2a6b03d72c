package import NIOPosix

/// Runs a blocking file call of the hub on a `NIOThreadPool`, never on the hub's actor, and answers within a time
/// limit: when ``limit`` passes (on ``clock``) or the waiting task is cancelled (shutdown), the caller gets
/// ``WorkspaceFileError/timedOut(path:limit:)`` or ``WorkspaceFileError/abandoned(path:)`` at once, and the call,
/// still on the pool, stops at its next step (it is told through `isAbandoned`).
package struct WorkspaceIO: Sendable {
    /// Where the calls run.
    let pool: NIOThreadPool
    /// The longest a call may take before its caller is answered with an error.
    let limit: Duration
    /// The clock the limit runs on (tests move one by hand).
    let clock: any Clock<Duration>

    /// Calls on `pool`, each answered within `limit` on `clock`.
    package init(pool: NIOThreadPool, limit: Duration, clock: any Clock<Duration>) {
        self.pool = pool
        self.limit = limit
        self.clock = clock
    }

    /// Runs `work` on the pool; `path` names it in errors.
    package func run<T: Sendable>(
        path: String,
        _ work: @escaping @Sendable (_ isAbandoned: () -> Bool) throws(WorkspaceFileError) -> T
    ) async -> Result<T, WorkspaceFileError> {
        let outcome = OneShotContinuation<Result<T, WorkspaceFileError>>()
        let limit = self.limit
        let clock = self.clock
        return await withTaskGroup(of: Void.self) { group in
            let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, WorkspaceFileError>, Never>) in
                outcome.arm(continuation)
                pool.submit { state in
                    guard case .active = state else {
                        outcome.resume(.failure(.abandoned(path: path)))
                        return
                    }
                    do throws(WorkspaceFileError) {
                        outcome.resume(.success(try work({ outcome.isDone })))
                    } catch {
                        outcome.resume(.failure(error))
                    }
                }
                group.addTask {
                    try? await clock.sleep(for: limit)
                    outcome.resume(.failure(Task.isCancelled ? .abandoned(path: path) : .timedOut(path: path, limit: limit)))
                }
            }
            group.cancelAll()
            return result
        }
    }
}
