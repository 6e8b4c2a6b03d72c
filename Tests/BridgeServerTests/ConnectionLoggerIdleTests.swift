import BridgeTestKit
import Logging
import Testing
@testable import BridgeServer

/// Issue 14 goal 4: a connection's logger adds its metadata as lines are written, instead of a metadata copy per
/// connection; what is printed is what the copy printed.
@Suite("A connection's logger without a metadata copy", .tags(.unit))
struct ConnectionLoggerIdleTests {
    @Test("lines carry connection, remote and device over the handler's metadata; the call site's wins over both")
    func metadata() {
        let log = TestLog()
        var base = log.logger(label: "test", level: .info)
        base[metadataKey: "bridge"] = "b"
        base[metadataKey: "remote"] = "handler's"
        let logger = ConnectionLogHandler.logger(base, connection: 7, remote: "10.0.0.2", device: "d1")
        logger.info("client connected", metadata: ["clients": "3"])
        logger.warning("cut off", metadata: ["remote": "call site"])
        base.info("bridge line")
        let lines = log.all.map(\.metadata)
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
        let log = TestLog()
        let logger = ConnectionLogHandler.logger(log.logger(label: "test", level: .info), connection: 1, remote: nil, device: nil)
        logger.info("client connected")
        #expect(log.all.map(\.metadata) == [["connection": "1"]])
    }
}
