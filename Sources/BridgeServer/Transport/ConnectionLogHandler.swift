import Logging

/// A connection's log handler: the bridge's own handler, with the connection's metadata (`connection`, `remote`,
/// `device`) added to each line as it is written, instead of a copy of the handler holding a metadata dictionary of
/// its own (issue 14 goal 4: that copy and its dictionary were ~0.5 KB per idle connection).
///
/// As when they were set on the handler, the connection's keys win over the bridge handler's, and metadata given at
/// the call site over both.
struct ConnectionLogHandler: LogHandler {
    private var parent: any LogHandler
    private let connection: ConnectionID
    private let remote: String?
    private let device: String?

    /// `base` with the connection's metadata.
    static func logger(_ base: Logger, connection: ConnectionID, remote: String?, device: String?) -> Logger {
        var logger = base
        logger.handler = ConnectionLogHandler(parent: base.handler, connection: connection, remote: remote, device: device)
        return logger
    }

    private init(parent: any LogHandler, connection: ConnectionID, remote: String?, device: String?) {
        self.parent = parent
        self.connection = connection
        self.remote = remote
        self.device = device
    }

    /// The connection's own metadata.
    private var own: Logger.Metadata {
        var metadata: Logger.Metadata = ["connection": "\(connection)"]
        if let remote { metadata["remote"] = "\(remote)" }
        if let device { metadata["device"] = "\(device)" }
        return metadata
    }

    func log(event: LogEvent) {
        var event = event
        event.metadata = own.merging(event.metadata ?? [:]) { _, atCallSite in atCallSite }
        parent.log(event: event)
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { own[key] ?? parent[metadataKey: key] }
        set { parent[metadataKey: key] = newValue }
    }

    var metadata: Logger.Metadata {
        get { parent.metadata.merging(own) { _, connections in connections } }
        set { parent.metadata = newValue }
    }

    var logLevel: Logger.Level {
        get { parent.logLevel }
        set { parent.logLevel = newValue }
    }

    var metadataProvider: Logger.MetadataProvider? {
        get { parent.metadataProvider }
        set { parent.metadataProvider = newValue }
    }
}
