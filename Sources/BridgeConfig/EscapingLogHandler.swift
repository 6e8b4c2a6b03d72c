public import Logging

/// A log handler that escapes control characters in every message and metadata value before its inner handler writes
/// them, so that a value a peer chose (a session id, a path, a method name with a newline) cannot start a line of its
/// own in a text log and forge a record (issue 27 item 10).
///
/// `\n`, `\r`, `\t` become those two-character escapes, other C0 and C1 controls, DEL and the Unicode line and
/// paragraph separators `\u{…}`; everything else is kept.
public struct EscapingLogHandler<Inner: LogHandler>: LogHandler {
    private var inner: Inner

    /// `inner`, writing escaped values.
    public init(wrapping inner: Inner) {
        self.inner = inner
    }

    /// Writes the record with its message and metadata escaped.
    public func log(event: LogEvent) {
        var event = event
        event.message = "\(Self.escape(event.message.description))"
        event.metadata = event.metadata.map(Self.escape)
        inner.log(event: event)
    }

    /// One metadata value of the handler (stored escaped).
    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { inner[metadataKey: key] }
        set { inner[metadataKey: key] = newValue.map(Self.escape) }
    }

    /// The handler's metadata (stored escaped).
    public var metadata: Logger.Metadata {
        get { inner.metadata }
        set { inner.metadata = Self.escape(newValue) }
    }

    /// The lowest level written.
    public var logLevel: Logger.Level {
        get { inner.logLevel }
        set { inner.logLevel = newValue }
    }

    /// Metadata asked for at each record; its values are escaped too.
    public var metadataProvider: Logger.MetadataProvider? {
        get { inner.metadataProvider }
        set { inner.metadataProvider = newValue.map { provider in Logger.MetadataProvider { Self.escape(provider.get()) } } }
    }

    /// `text` with its control characters escaped (the same text when it has none).
    public static func escape(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: needsEscape) else { return text }
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": escaped += "\\n"
            case "\r": escaped += "\\r"
            case "\t": escaped += "\\t"
            case _ where needsEscape(scalar): escaped += "\\u{\(String(scalar.value, radix: 16))}"
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }

    private static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (scalar.value >= 0x7F && scalar.value < 0xA0) || scalar.value == 0x2028 || scalar.value == 0x2029
    }

    private static func escape(_ metadata: Logger.Metadata) -> Logger.Metadata {
        metadata.mapValues(escape)
    }

    private static func escape(_ value: Logger.Metadata.Value) -> Logger.Metadata.Value {
        switch value {
        case .string(let text): .string(escape(text))
        case .stringConvertible(let convertible): .string(escape(convertible.description))
        case .dictionary(let dictionary): .dictionary(escape(dictionary))
        case .array(let array): .array(array.map(escape))
        }
    }
}
