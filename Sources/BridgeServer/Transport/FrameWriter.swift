import NIOCore

/// Where a connection's text frames go: its channel (``ChannelFrameWriter``), or a test's stand-in.
protocol FrameWriter: Sendable {
    /// Runs `body` where frames are written (the channel's event loop), after everything submitted before it.
    func execute(_ body: @escaping @Sendable () -> Void)
    /// Called from a `body` of ``execute(_:)``: writes `frames` in order with one flush, and calls `completed` once
    /// the last of them is written to the socket or failed (writes complete in order, so all of them are done).
    func write(_ frames: [ByteBuffer], completed: @escaping @Sendable () -> Void)
    /// Closes the connection at once, whatever is still unwritten.
    func close()
}
