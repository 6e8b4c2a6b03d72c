public import Foundation
public import Logging

/// Configures swift-log once for the process: text or JSON lines on stderr.
public enum BridgeLogging {
    /// The log line format.
    public enum Format: String, Sendable, CaseIterable {
        /// swift-log's standard text lines.
        case text
        /// One JSON object per line: `ts`, `level`, `label`, `msg`, `source`, then metadata.
        case json
    }

    /// Bootstraps `LoggingSystem` (once per process) with `format` on stderr at `level`.
    public static func bootstrap(level: Logger.Level, format: Format) {
        LoggingSystem.bootstrap { label in
            switch format {
            case .text:
                // Escaped: a value a peer chose (a session id with a newline) cannot forge a line of the text log.
                var handler = EscapingLogHandler(wrapping: StreamLogHandler.standardError(label: label))
                handler.logLevel = level
                return handler
            case .json:
                var handler = JSONLogHandler(label: label)
                handler.logLevel = level
                return handler
            }
        }
    }
}

/// Writes each log record as one JSON object on a line (stderr by default): the metadata (handler, provider, then
/// the record's own, later ones winning), then `ts`, `level`, `label`, `msg` and `source`.
public struct JSONLogHandler: LogHandler {
    /// The logger's label.
    public let label: String
    /// The lowest level written.
    public var logLevel: Logger.Level = .info
    /// Metadata added to every record.
    public var metadata: Logger.Metadata = [:]
    /// Metadata asked for at each record.
    public var metadataProvider: Logger.MetadataProvider?
    private let write: @Sendable (Data) -> Void

    /// A handler writing to stderr.
    public init(label: String) {
        self.init(label: label) { FileHandle.standardError.write($0) }
    }

    /// A handler handing each line (with its newline) to `write`.
    public init(label: String, write: @escaping @Sendable (Data) -> Void) {
        self.label = label
        self.write = write
    }

    /// One metadata value.
    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// Writes the record as one JSON line.
    public func log(event: LogEvent) {
        var object: [String: String] = [:]
        for (key, value) in metadata { object[key] = "\(value)" }
        for (key, value) in metadataProvider?.get() ?? [:] { object[key] = "\(value)" }
        for (key, value) in event.metadata ?? [:] { object[key] = "\(value)" }
        object["ts"] = ISO8601DateFormatter().string(from: Date())
        object["level"] = event.level.rawValue
        object["label"] = label
        object["msg"] = "\(event.message)"
        object["source"] = event.source
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(object) else { return }
        write(data + Data("\n".utf8))
    }
}
