/// Work handed to the hub by code that cannot await it (an event loop's timer, a connection's synchronous end): posted
/// with ``BridgeHub/post(_:)`` and run, in order, by a task of ``BridgeHub/run()``'s group, which owns it (nothing is
/// left running when the hub stops: errands posted after that are dropped with the stream).
enum HubErrand: Sendable {
    /// A connection ended where nothing could wait for the hub (a Streamable HTTP connection's end): the hub forgets it
    /// (``BridgeHub/disconnect(_:)``).
    case disconnect(ConnectionID)
    /// The system clock's initialize deadline of a connection passed (a timer on its event loop): the hub closes it
    /// unless it initialized (``BridgeHub/initializeDeadline(_:)``); while an `initialize` is still being answered,
    /// `again` arms the next period.
    case initializeDeadline(ConnectionID, again: @Sendable () -> Void)
}

extension BridgeHub {
    /// Hands `errand` to the hub's run group, from any thread, without waiting.
    nonisolated func post(_ errand: HubErrand) {
        errandSink.yield(errand)
    }

    /// Runs one errand (``run()``'s group calls it for each, in order).
    func handle(_ errand: HubErrand) async {
        switch errand {
        case .disconnect(let id):
            await disconnect(id)
        case .initializeDeadline(let id, let again):
            if initializeDeadline(id) == .inProgress { again() }
        }
    }
}
