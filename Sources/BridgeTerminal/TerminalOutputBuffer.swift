/// A terminal's output, kept up to a byte limit: past it the oldest bytes go, cut at a UTF-8 character boundary
/// (ACP's `outputByteLimit`: "truncates from the beginning … at a character boundary … even if this means the
/// retained output is slightly less than the specified limit").
///
/// Appending is amortised O(bytes appended): dropped bytes are only moved out once they outnumber the kept ones.
struct TerminalOutputBuffer: Sendable {
    /// The most bytes kept.
    let limit: Int
    /// Storage; the kept bytes are `storage[start...]`.
    private var storage: [UInt8] = []
    private var start = 0
    /// Whether bytes were ever dropped from the beginning.
    private(set) var truncated = false
    /// How many bytes were dropped since ``take(final:)`` last ran (or since the start).
    private(set) var droppedSinceTake = 0

    /// An empty buffer keeping at most `limit` bytes (a negative limit counts as 0).
    init(limit: Int) {
        self.limit = max(limit, 0)
    }

    /// The bytes kept.
    var count: Int { storage.count - start }

    /// Adds output at the end, dropping the oldest bytes past ``limit`` (at a character boundary).
    mutating func append(_ bytes: some Collection<UInt8>) {
        guard !bytes.isEmpty else { return }
        storage.append(contentsOf: bytes)
        let excess = count - limit
        guard excess > 0 else { return }
        var drop = start + excess
        // Never start the kept bytes inside a character: skip its continuation bytes (10xxxxxx).
        while drop < storage.count, Self.isContinuation(storage[drop]) { drop += 1 }
        droppedSinceTake += drop - start
        truncated = true
        start = drop
        if start > count {
            storage.removeFirst(start)
            start = 0
        }
    }

    /// The kept output as text.
    ///
    /// While the process runs (`final` false) an incomplete character at the end is left out (its other bytes are
    /// still to come); at the end it is decoded as U+FFFD, like any invalid byte.
    func text(final: Bool) -> String {
        let end = final ? storage.count : storage.count - Self.incompleteTail(storage[start...])
        return String(decoding: storage[start..<end], as: UTF8.self)
    }

    /// The kept output as text (see ``text(final:)``), emptying the buffer but for an incomplete character at the end
    /// (unless `final`); also returns how many bytes were dropped since the last take.
    mutating func take(final: Bool) -> (text: String, dropped: Int) {
        let kept = final ? 0 : Self.incompleteTail(storage[start...])
        let end = storage.count - kept
        let text = String(decoding: storage[start..<end], as: UTF8.self)
        let dropped = droppedSinceTake
        storage = Array(storage[end...])
        start = 0
        droppedSinceTake = 0
        return (text, dropped)
    }

    private static func isContinuation(_ byte: UInt8) -> Bool {
        byte & 0b1100_0000 == 0b1000_0000
    }

    /// How many bytes at the end of `bytes` begin a character whose other bytes have not come yet (0 to 3).
    static func incompleteTail(_ bytes: ArraySlice<UInt8>) -> Int {
        var index = bytes.endIndex
        var seen = 0
        while index > bytes.startIndex, seen < 4 {
            index -= 1
            seen += 1
            let byte = bytes[index]
            if isContinuation(byte) { continue }
            let length = byte < 0x80 ? 1 : byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : byte >= 0xC0 ? 2 : 1
            return length > seen ? seen : 0
        }
        return 0
    }
}
