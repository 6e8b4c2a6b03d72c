/// The bytes of a message's `params` object as its sender wrote them, kept beside the parsed value so that a relay
/// can forward them without encoding the value again (the bridge splices `_meta.seq` into them).
///
/// Only ``JSONRPCFrame/init(parsingUTF8:)`` makes them, for a single notification whose `params` is an object. The
/// bytes are valid JSON (the parser read them); whether they also say exactly what the parsed value says is
/// ``isForwardable``.
public struct JSONRawParams: Sendable {
    /// The whole message's bytes (shared with the line read, not copied).
    private let message: [UInt8]
    /// Where `params` is in ``message``: from its `{` to its `}`.
    private let span: Range<Int>
    /// Whether some object of the message repeated a key.
    private let repeatedKey: Bool

    init(message: [UInt8], span: Range<Int>, repeatedKey: Bool) {
        self.message = message
        self.span = span
        self.repeatedKey = repeatedKey
    }

    /// How many bytes `params` takes.
    public var count: Int { span.count }

    /// Whether the bytes can go out as they are: valid UTF-8 (the parser repairs invalid sequences in the value, the
    /// bytes would carry them) and no object repeats a key (the value kept only the last, a reader might keep the first).
    public var isForwardable: Bool {
        !repeatedKey && message.withUnsafeBufferPointer { UTF8Check.isValid(UnsafeBufferPointer(rebasing: $0[span])) }
    }

    /// Calls `body` with the bytes of `params`, from its `{` to its `}`.
    public func withUnsafeBytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) throws -> Result) rethrows -> Result {
        try message.withUnsafeBufferPointer { try body(UnsafeBufferPointer(rebasing: $0[span])) }
    }
}
