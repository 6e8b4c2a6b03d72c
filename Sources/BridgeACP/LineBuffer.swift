import Foundation

/// Splits a byte stream into `\n`-terminated lines (a trailing `\r` is dropped), bounding how much it keeps.
struct LineBuffer: Sendable {
    /// A line longer than this is dropped (and reported) rather than kept growing.
    let maxLineLength: Int
    private var pending = Data()
    private var discarding = false

    init(maxLineLength: Int) {
        self.maxLineLength = maxLineLength
    }

    /// Adds bytes; returns the complete lines they finish, and how many over-long lines were dropped.
    mutating func append(_ data: Data) -> (lines: [String], dropped: Int) {
        var lines: [String] = []
        var dropped = 0
        var rest = data[...]
        while let newline = rest.firstIndex(of: 0x0A) {
            let piece = rest[rest.startIndex..<newline]
            rest = rest[rest.index(after: newline)...]
            if discarding {
                discarding = false
                pending.removeAll()
                continue
            }
            pending.append(piece)
            if pending.last == 0x0D { pending.removeLast() }
            if !pending.isEmpty { lines.append(String(decoding: pending, as: UTF8.self)) }
            pending.removeAll(keepingCapacity: true)
        }
        if !discarding {
            pending.append(rest)
            if pending.count > maxLineLength {
                discarding = true
                dropped += 1
                pending.removeAll()
            }
        }
        return (lines, dropped)
    }

    /// What is left after the stream ended without a final newline.
    mutating func finish() -> String? {
        defer { pending.removeAll() }
        guard !discarding, !pending.isEmpty else { return nil }
        return String(decoding: pending, as: UTF8.self)
    }
}
