/// How a client waits for its WebSocket to open: ``BridgeRPCClient`` and ``ACPRelayLink`` start the connection in a
/// task that reports the opening (or its failure) once on `opened`; this waits for that report, at most `timeout`.
enum WebSocketOpening {
    /// The first result `opened` yields; a timeout's failure naming `url` when none comes within `timeout`; `nil` when
    /// `opened` ends without one.
    ///
    /// Cancelling the caller cancels the wait.
    static func firstResult(
        of opened: AsyncStream<Result<Void, any Error>>, within timeout: Duration, url: String
    ) async throws -> Result<Void, any Error>? {
        try await withThrowingTaskGroup(of: Result<Void, any Error>?.self) { group in
            group.addTask {
                for await result in opened { return result }
                return nil
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                return .failure(BridgeClientError.timedOut("opening \(url) took longer than \(timeout)"))
            }
            defer { group.cancelAll() }
            return try await group.next() ?? nil
        }
    }
}
