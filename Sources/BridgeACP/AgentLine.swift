import NIOCore

/// One line read from an agent's stdout or stderr, as ``LineFramer`` cuts it.
enum AgentLine: Sendable, Hashable {
    /// A complete, non-empty line without its `\n` (or `\r\n`): UTF-8 bytes, a slice of what was read.
    case line(ByteBuffer)
    /// A line longer than the maximum was dropped whole (it is reported once, however long it grows).
    case overlong
}
