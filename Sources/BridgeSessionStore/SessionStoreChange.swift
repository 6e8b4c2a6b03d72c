/// Something that becomes the text of a stored update only when the store writes it (off the relay's hot path).
public protocol SessionStorePayload: Sendable {
    /// The JSON text to store.
    var storedText: String { get }
}

extension String: SessionStorePayload {
    /// The string itself.
    public var storedText: String { self }
}

/// One change the bridge asks the store to make; queued and written in batches (see ``SessionStore/enqueue(_:)``).
public enum SessionStoreChange: Sendable {
    /// Creates or replaces a session's row (its `nextSeq` never goes back).
    case upsertSession(StoredSessionRow)
    /// Keeps an update of a session.
    case appendUpdate(session: String, seq: Int64, payload: any SessionStorePayload)
    /// Drops a session's updates before `seq` (the replay buffer let them go).
    case trimUpdates(session: String, before: Int64)
    /// Sets a session's title.
    case setTitle(session: String, title: String)
    /// Keeps an idempotency key (its outcome once known).
    case putKey(StoredPromptKeyRow)
    /// Drops a session's keys older than `position`.
    case trimKeys(session: String, before: Int64)
    /// Forgets a session with its updates and keys.
    case deleteSession(String)
    /// Records that the session may hand out `seq` numbers up to `through` before the next reservation is written
    /// (it never goes back): after a crash, the restored session numbers from past it, so a `seq` a phone saw is never
    /// given to another update, even when the crash lost the newest stored updates (issue 25, finding F7).
    case reserveSeq(session: String, through: Int64)
    /// Every session's reservation is used up to what is stored: written last at a clean stop, after everything else.
    case releaseReservations
}
