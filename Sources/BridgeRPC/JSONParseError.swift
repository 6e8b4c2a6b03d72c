/// Why a text is not valid JSON, and where (a byte offset into its UTF-8 form).
public struct JSONParseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong, in words.
    public var message: String
    /// The byte offset where the problem was noticed.
    public var offset: Int

    /// Creates a parse error.
    public init(message: String, offset: Int) {
        self.message = message
        self.offset = offset
    }

    /// "message at byte N".
    public var description: String { "\(message) at byte \(offset)" }
}
