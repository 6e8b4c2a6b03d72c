/// A session's latest `session/update`s, oldest first, for `_oa/session/resume`: a ring of at most `limit` entries,
/// so keeping one more update costs the same however full the buffer is (no copying or shifting of the rest).
struct ReplayBuffer: Sequence {
    private var storage: [BufferedUpdate] = []
    /// Where the oldest entry is once the ring is full (`storage[head]`); 0 until then.
    private var head = 0

    /// How many updates are kept.
    var count: Int { storage.count }

    /// The oldest update kept.
    var first: BufferedUpdate? { storage.isEmpty ? nil : storage[head] }

    /// Keeps `update`, dropping the oldest ones beyond `limit` (a `limit` of 0 or less keeps nothing).
    mutating func append(_ update: BufferedUpdate, limit: Int) {
        guard limit > 0 else {
            storage.removeAll()
            head = 0
            return
        }
        if storage.count > limit || (head != 0 && storage.count < limit) {
            // The limit changed since the ring filled: lay it out oldest first again and trim.
            storage = Array(self.suffix(limit))
            head = 0
        }
        if storage.count < limit {
            storage.append(update)
        } else {
            storage[head] = update
            head = head + 1 == limit ? 0 : head + 1
        }
    }

    /// The updates, oldest first.
    func makeIterator() -> Iterator {
        Iterator(storage: storage, position: head, remaining: storage.count)
    }

    /// Walks the ring from the oldest entry.
    struct Iterator: IteratorProtocol {
        let storage: [BufferedUpdate]
        var position: Int
        var remaining: Int

        mutating func next() -> BufferedUpdate? {
            guard remaining > 0 else { return nil }
            let update = storage[position]
            position = position + 1 == storage.count ? 0 : position + 1
            remaining -= 1
            return update
        }
    }
}
