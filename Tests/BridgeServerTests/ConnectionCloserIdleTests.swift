import BridgeTestKit
import NIOCore
import NIOEmbedded
import NIOWebSocket
import Synchronization
import Testing
@testable import BridgeServer

/// What a ``ConnectionCloser`` did to its connection.
private final class CloseLog: Sendable {
    private let state = Mutex<(sent: [String], closed: Int)>(([], 0))
    /// Told of everything the closer did to the connection (a close sent, the timeout armed, the connection closed).
    private let changes = ChangeSignal()
    var sent: [String] { state.withLock { $0.sent } }
    var closed: Int { state.withLock { $0.closed } }

    func closer(on loop: any EventLoop, failing: Bool = false) -> ConnectionCloser<LoggedTarget> {
        ConnectionCloser(LoggedTarget(log: self, eventLoop: loop, failing: failing), closeTimeout: .seconds(15))
    }

    fileprivate func record(sent line: String) {
        state.withLock { $0.sent.append(line) }
        changes.notify()
    }

    fileprivate func closedOnce() {
        state.withLock { $0.closed += 1 }
        changes.notify()
    }

    fileprivate func armed() { changes.notify() }

    /// Waits (bounded: 5 s) until the closer's task got as far as `condition` says; it is a task, not a timer, that
    /// is waited for, and each of its steps is told here.
    func wait(until condition: () -> Bool) async throws {
        try #require(await changes.wait(timeout: .seconds(5), for: condition))
    }
}

/// A connection that records into a ``CloseLog``; its close frame can fail to go out.
private struct LoggedTarget: ConnectionCloseTarget {
    let log: CloseLog
    let eventLoop: any EventLoop
    let failing: Bool

    func sendClose(_ kind: OutboundFrame.CloseKind, _ reason: String) async throws {
        log.record(sent: "\(kind.code) \(reason)")
        if failing { throw ChannelError.ioOnClosedChannel }
    }

    func closeConnection() { log.closedOnce() }

    func closeTimeoutArmed() { log.armed() }
}

/// Issue 14 goal 4: the close the hub queues is sent from a task started only then, and its timeout is a timer on the
/// event loop (tested on the loop's manual time).
@Suite("A connection's close without a waiting task", .tags(.unit))
struct ConnectionCloserIdleTests {
    @Test("the close is sent once; a peer that does not answer is closed at the close timeout, not before")
    func unanswered() async throws {
        let loop = NIOAsyncTestingEventLoop()
        let log = CloseLog()
        let closer = log.closer(on: loop)
        closer.send(.goingAway, "bridge shutting down")
        closer.send(.policyViolation, "again")
        try await log.wait { closer.waitsForAnswer }
        #expect(log.sent == ["\(WebSocketErrorCode.goingAway) bridge shutting down"])
        await loop.advanceTime(by: .seconds(14))
        #expect(log.closed == 0)
        await loop.advanceTime(by: .seconds(1))
        #expect(log.closed == 1)
        closer.end()
        await loop.shutdownGracefully()
    }

    @Test("a connection that ends (the peer answered) stops the timer: nothing is closed at the timeout")
    func answered() async throws {
        let loop = NIOAsyncTestingEventLoop()
        let log = CloseLog()
        let closer = log.closer(on: loop)
        closer.send(.tokenExpired, "token expired")
        try await log.wait { closer.waitsForAnswer }
        closer.end()
        #expect(!closer.waitsForAnswer)
        await loop.advanceTime(by: .seconds(30))
        #expect(log.closed == 0)
        await loop.shutdownGracefully()
    }

    @Test("a close that cannot be written closes the connection at once; none is sent after the end")
    func failedAndEnded() async throws {
        let loop = NIOAsyncTestingEventLoop()
        let failing = CloseLog()
        let closer = failing.closer(on: loop, failing: true)
        closer.send(.messageTooBig, "too big")
        try await failing.wait { failing.closed == 1 }
        #expect(failing.closed == 1)
        #expect(!closer.waitsForAnswer)

        let ended = CloseLog()
        let late = ended.closer(on: loop)
        late.end()
        late.send(.goingAway, "bye")
        await loop.advanceTime(by: .seconds(30))
        #expect(ended.sent.isEmpty)
        #expect(ended.closed == 0)
        await loop.shutdownGracefully()
    }
}
