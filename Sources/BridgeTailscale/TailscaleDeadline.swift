/// Bounds a Tailscale status attempt in time, without blocking a thread: the work runs in a child task that is
/// cancelled when the time is up.
enum TailscaleDeadline {
    /// Runs `work`; throws ``TailscaleError/unreachable(_:)`` naming `what` if it takes longer than `timeout`.
    static func run<Value: Sendable>(
        within timeout: Duration, _ what: String, _ work: @escaping @Sendable () async throws -> Value
    ) async throws -> Value {
        try await withThrowingTaskGroup(of: Value?.self) { group in
            group.addTask { try await work() }
            group.addTask {
                try await Task.sleep(for: timeout)
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let value = first else {
                throw TailscaleError.unreachable("\(what) did not answer within \(timeout)")
            }
            return value
        }
    }
}
