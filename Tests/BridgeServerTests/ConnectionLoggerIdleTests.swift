import Logging
import Synchronization
import Testing
@testable import BridgeServer

/// Where ``SinkLogHandler`` puts the metadata of each line.
private final class LogSink: Sendable {
    private let recorded = Mutex<[Logger.Metadata]>([])
    var lines: [Logger.Metadata] { recorded.withLock { $0 } }

    func append(_ metadata: Logger.Metadata) { recorded.withLock { $0.append(metadata) } }

    func logger() -> Logger {
        Logger(label: "test") { _ in SinkLogHandler(sink: self) }
    }
}

/// A log handler that records the metadata it would print (its own, the event's on top), as the bridge's handlers do.
private struct SinkLogHandler: LogHandler {
    let sink: LogSink
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .info

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        sink.append(metadata.merging(event.metadata ?? [:]) { _, event in event })
    }
}

/// Issue 14 goal 4: a connection's logger adds its metadata as lines are written, instead of a metadata copy per
/// connection; what is printed is what the copy printed.
@Suite("A connection's logger without a metadata copy", .tags(.unit))
struct ConnectionLoggerIdleTests {
    @Test("lines carry connection, remote and device over the handler's metadata; the call site's wins over both")
    func metadata() {
        let sink = LogSink()
        var base = sink.logger()
        base[metadataKey: "bridge"] = "b"
        base[metadataKey: "remote"] = "handler's"
        let logger = ConnectionLogHandler.logger(base, connection: 7, remote: "10.0.0.2", device: "d1")
        logger.info("client connected", metadata: ["clients": "3"])
        logger.warning("cut off", metadata: ["remote": "call site"])
        base.info("bridge line")
        let lines = sink.lines
        #expect(lines.count == 3)
        #expect(lines.first == ["bridge": "b", "connection": "7", "remote": "10.0.0.2", "device": "d1", "clients": "3"])
        #expect(lines.dropFirst().first?["remote"] == "call site")
        #expect(lines.last == ["bridge": "b", "remote": "handler's"], "the bridge's own logger is unchanged")
        #expect(logger[metadataKey: "connection"] == "7")
        #expect(logger[metadataKey: "remote"] == "10.0.0.2")
        #expect(logger[metadataKey: "bridge"] == "b")
        #expect(logger.handler.metadata == ["bridge": "b", "connection": "7", "remote": "10.0.0.2", "device": "d1"])
        #expect(logger.logLevel == base.logLevel)
    }

    @Test("without a remote address or device only the connection is added")
    func connectionOnly() {
        let sink = LogSink()
        let logger = ConnectionLogHandler.logger(sink.logger(), connection: 1, remote: nil, device: nil)
        logger.info("client connected")
        #expect(sink.lines == [["connection": "1"]])
    }
}
