import BridgeRPC

/// A session's latest `session/update`s, oldest first, for `_oa/session/resume`: at most `limit` entries and at most
/// `byteLimit` bytes of params, the oldest dropped first.
///
/// Keeping one more update costs the same however full the buffer is (amortised: dropped entries are released at
/// once, the slots compacted now and then).
///
/// Bytes are the params' size as compact JSON, not counting the extra bytes of escape sequences (for an update kept as
/// the agent's own bytes, their size as written).
struct ReplayBuffer: Sequence {
    fileprivate struct Entry {
        let update: BufferedUpdate
        let bytes: Int
    }

    /// Entries from `head` on are kept, oldest first; slots before `head` are empty (already dropped).
    private var storage: [Entry?] = []
    private var head = 0
    /// The bytes of the updates kept.
    private(set) var byteCount = 0

    /// How many updates are kept.
    var count: Int { storage.count - head }

    /// The oldest update kept.
    var first: BufferedUpdate? { head < storage.count ? storage[head]?.update : nil }

    /// Keeps `update`, dropping the oldest ones beyond `limit` entries or `byteLimit` bytes.
    ///
    /// An update larger than `byteLimit` on its own is not kept, and neither is anything before it (a resume then
    /// reports the gap rather than replaying around a hole). A `limit` of 0 or less keeps nothing.
    mutating func append(_ update: BufferedUpdate, limit: Int, byteLimit: Int = .max) {
        let bytes = update.byteCount
        guard limit > 0, bytes <= byteLimit else {
            storage.removeAll()
            head = 0
            byteCount = 0
            return
        }
        storage.append(Entry(update: update, bytes: bytes))
        byteCount += bytes
        while count > limit || byteCount > byteLimit {
            byteCount -= storage[head]?.bytes ?? 0
            storage[head] = nil
            head += 1
        }
        if head >= 64, head * 2 >= storage.count {
            storage.removeFirst(head)
            head = 0
        }
    }

    /// The size of `value` as compact JSON (escape sequences counted as the characters they stand for).
    static func byteSize(of value: JSONValue?) -> Int {
        guard let value else { return 0 }
        switch value {
        case .null, .bool: return 5
        case .int(let number):
            var digits = number < 0 ? 2 : 1
            var rest = number / 10
            while rest != 0 {
                digits += 1
                rest /= 10
            }
            return digits
        case .double: return 24
        case .number(let number): return number.text.utf8.count
        case .string(let text): return text.utf8.count + 2
        case .array(let elements): return elements.reduce(1 + Swift.max(elements.count, 1)) { $0 + byteSize(of: $1) }
        case .object(let members):
            return members.reduce(1 + Swift.max(members.count, 1)) { $0 + $1.key.utf8.count + 3 + byteSize(of: $1.value) }
        }
    }

    /// The updates, oldest first.
    func makeIterator() -> Iterator {
        Iterator(storage: storage, position: head)
    }

    /// Walks the kept entries from the oldest.
    struct Iterator: IteratorProtocol {
        fileprivate let storage: [Entry?]
        var position: Int

        mutating func next() -> BufferedUpdate? {
            guard position < storage.count else { return nil }
            defer { position += 1 }
            return storage[position]?.update
        }
    }
}
