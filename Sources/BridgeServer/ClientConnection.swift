import BridgePairing
import Foundation
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOWebSocket

/// Runs one WebSocket connection: reads frames into the hub (what the hub queues for it goes straight into the
/// channel), closes it if `initialize` does not come in time, and (for a paired device) when its access token expires.
struct ClientConnection {
    let hub: BridgeHub
    let configuration: BridgeServerConfiguration
    /// The paired device the upgrade was authenticated as, if auth is on.
    var device: AuthenticatedDevice? = nil

    /// Messages up to this size are read and answered with an error if over ``BridgeServerConfiguration/maxFrameSize``;
    /// beyond it the connection is closed with 1009.
    static func readLimit(for maxFrameSize: Int) -> Int {
        max(maxFrameSize * 2, maxFrameSize + 64 * 1024)
    }

    /// Thrown by the reader and the closer when they end: it ends the connection's other tasks.
    private struct Ended: Error {}

    /// How long a close the bridge sent waits for the peer's answering close before the connection is closed (as the
    /// WebSocket handler does after its own close).
    static let closeTimeout: Duration = .seconds(15)

    /// The initialize deadline, as a timer on the connection's event loop rather than a task: at the deadline the hub
    /// closes the connection if it has not initialized; an `initialize` still being answered (a slow agent starting)
    /// earns another period.
    static func watchInitialize(_ id: ConnectionID, hub: BridgeHub, on eventLoop: any EventLoop, after timeout: Duration) -> Scheduled<Void> {
        eventLoop.scheduleTask(in: TimeAmount(timeout)) {
            Task {
                if await hub.initializeDeadline(id) == .inProgress {
                    _ = watchInitialize(id, hub: hub, on: eventLoop, after: timeout)
                }
            }
        }
    }

    /// Runs the connection on `channel` (whose WebSocket handler reads `inbound` and writes `outbound`) until it ends.
    /// What the hub queues for it is written straight into the channel (``OutboundQueue``); this task reads; a close
    /// the hub queues is sent through `outbound` by a small task that waits for it.
    func run(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter, channel: any Channel, remote: String?) async throws {
        let (id, frames) = await hub.connect(remote: remote, device: device)
        frames.attach(ChannelFrameWriter(channel: channel))
        // The access token's expiry (a paired device only) is watched by the hub's connection sweep.
        if let expiresAt = device?.accessTokenExpiresAt { hub.tokenExpiresAt(expiresAt) }
        let initializeDeadline = ClientConnection.watchInitialize(id, hub: hub, on: channel.eventLoop, after: configuration.initializeTimeout)
        defer { initializeDeadline.cancel() }
        if let period = configuration.pingInterval { WebSocketKeepalive.install(on: channel, period: period) }
        let hub = self.hub
        let configuration = self.configuration
        do {
            // The connection ends when its reader (this task) or its closer ends (each throws ``Ended``); a cut-off
            // closes the channel, which ends the reader. An idle connection keeps one task of its own: the closer.
            try await withThrowingDiscardingTaskGroup { group in
                // Closer: a close frame the hub queued, after the frames queued before it.
                group.addTask {
                    if case .close(let kind, let reason) = await frames.nextClose() {
                        try await outbound.close(kind.code, reason: String(reason.utf8.prefix(120)) ?? "closing")
                        // The reader ends when the peer answers; a peer that does not is closed.
                        try await Task.sleep(for: ClientConnection.closeTimeout)
                        channel.close(promise: nil)
                    }
                    throw Ended()
                }
                // Reader, in this task.
                let limit = ClientConnection.readLimit(for: configuration.maxFrameSize)
                for try await message in inbound.messages(maxSize: limit) {
                    switch message {
                    case .text(let text):
                        let size = text.utf8.count
                        if size > configuration.maxFrameSize {
                            await hub.rejectOversized(id, size: size)
                        } else {
                            await hub.receive(text, from: id)
                        }
                    case .binary:
                        await hub.rejectBinary(id)
                    }
                }
                throw Ended()
            }
        } catch is Ended {
        } catch is CancellationError {
        } catch {
            await hub.disconnect(id)
            throw error
        }
        await hub.disconnect(id)
    }
}
