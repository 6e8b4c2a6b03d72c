import Foundation
import Logging

/// Configures swift-log once for the process: text or JSON lines on stderr.
enum LoggingSetup {
    /// The log line format.
    enum Format: String, Sendable, CaseIterable {
        /// swift-log's standard text lines.
        case text
        /// One JSON object per line: `ts`, `level`, `label`, `msg`, then metadata.
        case json
    }

    static func bootstrap(level: Logger.Level, format: Format) {
        LoggingSystem.bootstrap { label in
            switch format {
            case .text:
                var handler = StreamLogHandler.standardError(label: label)
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

/// Writes each log record as one JSON object on stderr.
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?

    init(label: String) {
        self.label = label
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var fields: [String: String] = [:]
        for (key, value) in metadata { fields[key] = "\(value)" }
        for (key, value) in metadataProvider?.get() ?? [:] { fields[key] = "\(value)" }
        for (key, value) in event.metadata ?? [:] { fields[key] = "\(value)" }
        var object: [String: String] = fields
        object["ts"] = ISO8601DateFormatter().string(from: Date())
        object["level"] = event.level.rawValue
        object["label"] = label
        object["msg"] = "\(event.message)"
        object["source"] = event.source
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(object) else { return }
        FileHandle.standardError.write(data + Data("\n".utf8))
    }
}
