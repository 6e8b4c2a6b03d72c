import NIOCore

/// Cuts a byte stream into `\n`-terminated lines (a trailing `\r` is dropped, empty lines are skipped), bounding how
/// much of one line it keeps: a line longer than ``maxLineLength`` is dropped whole and reported once.
///
/// Lines come out as slices of the buffer read (no copy). Bytes already searched for a newline are not searched again
/// when more arrive, so a long line read in many chunks costs linear time.
struct LineFramer: Sendable {
    /// A line longer than this (without its line break) is dropped rather than kept growing.
    let maxLineLength: Int
    /// How many readable bytes at the start of the buffer are known to hold no newline.
    private var scanned = 0
    /// Inside an over-long line already reported: skip up to the next newline.
    private var discarding = false

    /// A framer that keeps lines of at most `maxLineLength` bytes.
    init(maxLineLength: Int) {
        self.maxLineLength = maxLineLength
    }

    /// The next line (or over-long report) in `buffer`, consuming what it covers; `nil` when more bytes are needed.
    mutating func next(_ buffer: inout ByteBuffer) -> AgentLine? {
        while true {
            let view = buffer.readableBytesView
            let searchFrom = view.startIndex + scanned
            guard let newline = view[searchFrom...].firstIndex(of: 0x0A) else {
                if discarding {
                    buffer.moveReaderIndex(forwardBy: view.count)
                    scanned = 0
                    return nil
                }
                if view.count > maxLineLength {
                    discarding = true
                    buffer.moveReaderIndex(forwardBy: view.count)
                    scanned = 0
                    return .overlong
                }
                scanned = view.count
                return nil
            }
            scanned = 0
            let length = newline - view.startIndex
            if discarding {
                discarding = false
                buffer.moveReaderIndex(forwardBy: length + 1)
                continue
            }
            if let line = take(length, from: &buffer) {
                buffer.moveReaderIndex(forwardBy: 1)
                return line
            }
            buffer.moveReaderIndex(forwardBy: 1)
        }
    }

    /// Every line (and over-long report) complete in `buffer`, in order, consuming what they cover; the rest of an
    /// unfinished line stays for the next bytes.
    mutating func lines(_ buffer: inout ByteBuffer) -> [AgentLine] {
        var lines: [AgentLine] = []
        while let line = next(&buffer) { lines.append(line) }
        return lines
    }

    /// Every line left once the stream has ended: the complete ones, then an unterminated last one.
    mutating func finishLines(_ buffer: inout ByteBuffer) -> [AgentLine] {
        var lines = self.lines(&buffer)
        if let last = finish(&buffer) { lines.append(last) }
        return lines
    }

    /// What is left once the stream has ended without a final newline: the last line, if any.
    mutating func finish(_ buffer: inout ByteBuffer) -> AgentLine? {
        if let line = next(&buffer) { return line }
        let rest = buffer.readableBytes
        defer {
            discarding = false
            scanned = 0
        }
        guard !discarding, rest > 0 else {
            buffer.moveReaderIndex(forwardBy: rest)
            return nil
        }
        return take(rest, from: &buffer)
    }

    /// Reads `length` bytes as a line: `nil` for an empty one, `.overlong` past the limit.
    private func take(_ length: Int, from buffer: inout ByteBuffer) -> AgentLine? {
        guard length <= maxLineLength else {
            buffer.moveReaderIndex(forwardBy: length)
            return .overlong
        }
        guard var line = buffer.readSlice(length: length) else { return nil }
        if line.readableBytesView.last == 0x0D { line.moveWriterIndex(to: line.writerIndex - 1) }
        return line.readableBytes == 0 ? nil : .line(line)
    }
}
