/// Splits a byte stream into `\n`-terminated lines (a trailing `\r` is dropped), bounding how much it keeps.
///
/// Lines come out as UTF-8 bytes; a line that lies whole inside one chunk is copied once, straight out of it.
struct LineBuffer: Sendable {
    /// A line longer than this is dropped (and reported) rather than kept growing.
    let maxLineLength: Int
    /// The start of a line whose end has not been read yet.
    private var pending: [UInt8] = []
    private var discarding = false

    init(maxLineLength: Int) {
        self.maxLineLength = maxLineLength
    }

    /// Adds bytes; calls `onLine` with each complete, non-empty line they finish, in order, and returns how many
    /// over-long lines were dropped.
    mutating func append(_ chunk: UnsafeBufferPointer<UInt8>, onLine: ([UInt8]) -> Void) -> Int {
        var dropped = 0
        var start = 0
        let count = chunk.count
        while start < count, let newline = chunk[start..<count].firstIndex(of: 0x0A) {
            let piece = UnsafeBufferPointer(rebasing: chunk[start..<newline])
            start = newline + 1
            if discarding {
                discarding = false
                pending.removeAll()
                continue
            }
            var line: [UInt8]
            if pending.isEmpty {
                line = Array(piece)
            } else {
                pending.append(contentsOf: piece)
                line = pending
                pending.removeAll(keepingCapacity: true)
            }
            if line.last == 0x0D { line.removeLast() }
            if !line.isEmpty { onLine(line) }
        }
        if !discarding && start < count {
            pending.append(contentsOf: UnsafeBufferPointer(rebasing: chunk[start..<count]))
            if pending.count > maxLineLength {
                discarding = true
                dropped += 1
                pending = []
            }
        }
        return dropped
    }

    /// What is left after the stream ended without a final newline.
    mutating func finish() -> [UInt8]? {
        defer { pending.removeAll() }
        guard !discarding, !pending.isEmpty else { return nil }
        return pending
    }
}
