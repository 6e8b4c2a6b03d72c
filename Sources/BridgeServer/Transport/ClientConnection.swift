import BridgePairing
import BridgeTime
import Foundation
import Logging
import NIOCore
import NIOWebSocket
import Synchronization

/// Runs one WebSocket connection: reads frames into the hub (what the hub queues for it goes straight into the
/// channel), closes it if `initialize` does not come in time, and (for a paired device) when its access token expires.
///
/// It holds only the few settings it uses, not the whole configuration: the connection's task keeps it in its async
/// frames for as long as the connection is open (issue 14 goal 4: bytes per idle connection).
struct ClientConnection {
    let hub: BridgeHub
    /// ``BridgeServerConfiguration/maxFrameSize``.
    let maxFrameSize: Int
    /// ``BridgeServerConfiguration/initializeTimeout``.
    let initializeTimeout: Duration
    /// ``BridgeServerConfiguration/pingInterval``.
    let pingInterval: Duration?
    /// The paired device the upgrade was authenticated as, if auth is on.
    let device: AuthenticatedDevice?

    init(hub: BridgeHub, configuration: BridgeServerConfiguration, device: AuthenticatedDevice? = nil) {
        self.hub = hub
        self.maxFrameSize = configuration.maxFrameSize
        self.initializeTimeout = configuration.initializeTimeout
        self.pingInterval = configuration.pingInterval
        self.device = device
    }

    /// Messages up to this size are read and answered with an error if over ``BridgeServerConfiguration/maxFrameSize``;
    /// beyond it the connection is closed with 1009.
    static func readLimit(for maxFrameSize: Int) -> Int {
        max(maxFrameSize * 2, maxFrameSize + 64 * 1024)
    }

    /// How long a close the bridge sent waits for the peer's answering close before the connection is closed (as the
    /// WebSocket handler does after its own close).
    static let closeTimeout: Duration = .seconds(15)

    /// The initialize deadline: at it the hub closes the connection if it has not initialized; an `initialize` still
    /// being answered (a slow agent starting) earns another period.
    ///
    /// It runs on the hub's clock (``BridgeServerConfiguration/clock``): on the system clock as a timer on the
    /// connection's event loop (an idle connection keeps no task for it), on any other clock (a test's, moved by hand)
    /// as a task sleeping on that clock, so a test moves the clock past the deadline instead of waiting for it.
    static func watchInitialize(_ id: ConnectionID, hub: BridgeHub, on eventLoop: any EventLoop, after timeout: Duration) -> InitializeWatch {
        let clock = hub.configuration.clock
        guard clock is ContinuousClock else {
            return .task(Task {
                repeat {
                    do { try await clock.sleep(for: timeout) } catch { return }
                } while await hub.initializeDeadline(id) == .inProgress
            })
        }
        return .timer(scheduleInitialize(id, hub: hub, on: eventLoop, after: timeout))
    }

    /// The system clock's initialize deadline: a timer on the event loop, armed again while `initialize` is answered.
    ///
    /// The timer hands the look to the hub's run group (``HubErrand/initializeDeadline(_:again:)``): no task of its own.
    private static func scheduleInitialize(_ id: ConnectionID, hub: BridgeHub, on eventLoop: any EventLoop, after timeout: Duration) -> Scheduled<Void> {
        eventLoop.scheduleTask(in: TimeAmount(timeout)) {
            hub.post(.initializeDeadline(id, again: { _ = scheduleInitialize(id, hub: hub, on: eventLoop, after: timeout) }))
        }
    }

    /// A connection's initialize deadline, cancelled when the connection ends.
    enum InitializeWatch {
        /// On the system clock: the event loop's timer.
        case timer(Scheduled<Void>)
        /// On an injected clock: the task sleeping on it.
        case task(Task<Void, Never>)

        /// Stops watching.
        func cancel() {
            switch self {
            case .timer(let scheduled): scheduled.cancel()
            case .task(let task): task.cancel()
            }
        }
    }

    /// Runs the connection on `channel` (whose ``WebSocketConnectionHandler`` delivers `messages`) until it ends.
    ///
    /// What the hub queues for it is written straight into the channel (``OutboundQueue``); this task reads. A close
    /// the hub queues is written by a task started only then (``ConnectionCloser``): an idle connection keeps no task
    /// of its own besides this one.
    func run(channel: any Channel, messages: ClientMessages, remote: String?) async {
        let (id, frames) = await hub.connect(remote: remote, device: device)
        let closer = ConnectionCloser(ChannelCloseTarget(channel: channel))
        defer { closer.end() }
        frames.attach(ChannelFrameWriter(channel: channel), onClose: closer.send)
        // The access token's expiry (a paired device only) is watched by the hub's connection sweep.
        if let expiresAt = device?.accessTokenExpiresAt { hub.tokenExpiresAt(expiresAt) }
        let initializeDeadline = ClientConnection.watchInitialize(id, hub: hub, on: channel.eventLoop, after: initializeTimeout)
        defer { initializeDeadline.cancel() }
        if let period = pingInterval { WebSocketKeepalive.install(on: channel, period: period) }
        // The messages end when the peer closes (or answers the bridge's close), or the channel closes (a cut-off,
        // the close timeout, a ping timeout, a protocol error).
        await read(messages, from: id)
        // Before the hub hears of the end: nothing of the connection is left waiting on the clock by then.
        initializeDeadline.cancel()
        await hub.disconnect(id)
    }

    /// Reads the connection's messages into the hub until the peer or the channel ends them.
    private func read(_ messages: ClientMessages, from id: ConnectionID) async {
        let maxFrameSize = self.maxFrameSize
        for await message in messages {
            switch message {
            case .text(let bytes):
                let size = bytes.readableBytes
                if size > maxFrameSize {
                    await hub.rejectOversized(id, size: size)
                } else {
                    await hub.receive(String(buffer: bytes), from: id)
                }
            case .binary:
                await hub.rejectBinary(id)
            }
        }
    }
}
