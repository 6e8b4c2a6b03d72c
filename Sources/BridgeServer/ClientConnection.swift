import BridgePairing
import Foundation
import HummingbirdWebSocket
import Logging
import NIOWebSocket

/// Runs one WebSocket connection: reads frames into the hub, writes what the hub queues for it,
/// closes it if `initialize` does not come in time, and (for a paired device) when its access token expires.
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

    /// Thrown by the reader, the writer and the cut-off watch when they end: it ends the connection's other tasks.
    private struct Ended: Error {}

    /// Writes what was queued during a loan (see ``OutboundQueue/lend()``), then hands the queue back to the writer.
    static func writeLent(_ frames: OutboundQueue, to outbound: WebSocketOutboundWriter) async throws {
        defer { frames.endLoan() }
        for frame in frames.takeLent() {
            frames.taken()
            // A close ends a loan at once (the writer sends it), so only text frames are lent.
            if case .textBytes(let bytes) = frame {
                try await outbound.write(.custom(WebSocketFrame(fin: true, opcode: .text, data: bytes)))
            }
            frames.written()
        }
    }

    func run(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter, remote: String?) async throws {
        let (id, frames) = await hub.connect(remote: remote, device: device)
        let hub = self.hub
        let configuration = self.configuration
        let expiresAt = device?.accessTokenExpiresAt
        do {
            // The connection ends when its reader, its writer or a cut-off ends (each throws ``Ended``); the
            // initialize deadline and the token's expiry end once they have done their part, so an idle connection
            // keeps three tasks.
            try await withThrowingDiscardingTaskGroup { group in
                // Writer: everything the hub queues, in order; a close frame ends it.
                group.addTask {
                    writing: while let batch = await frames.next() {
                        for frame in batch {
                            frames.taken()
                            switch frame {
                            case .textBytes(let bytes):
                                try await outbound.write(.custom(WebSocketFrame(fin: true, opcode: .text, data: bytes)))
                                frames.written()
                            case .close(let kind, let reason):
                                try await outbound.close(kind.code, reason: String(reason.utf8.prefix(120)) ?? "closing")
                                break writing
                            }
                        }
                    }
                    throw Ended()
                }
                // A client cut off for not reading closes at once, even with the writer blocked on it.
                group.addTask {
                    await frames.waitForCutOff()
                    throw Ended()
                }
                // The initialize deadline.
                // (An initialize still being answered, while a slow agent starts, earns another period.)
                group.addTask {
                    repeat {
                        try await Task.sleep(for: configuration.initializeTimeout)
                    } while await hub.initializeDeadline(id) == .inProgress
                }
                // The access token's expiry (a paired device only).
                if let expiresAt {
                    group.addTask {
                        let remaining = expiresAt.timeIntervalSinceNow
                        if remaining > 0 { try await Task.sleep(for: .milliseconds(Int64(remaining * 1000) + 1)) }
                        await hub.tokenExpired(id)
                    }
                }
                // Reader.
                group.addTask {
                    let limit = ClientConnection.readLimit(for: configuration.maxFrameSize)
                    for try await message in inbound.messages(maxSize: limit) {
                        switch message {
                        case .text(let text):
                            let size = text.utf8.count
                            if size > configuration.maxFrameSize {
                                await hub.rejectOversized(id, size: size)
                            } else {
                                // With the writer idle, the reader writes the answers itself (no wake-up).
                                let lent = frames.lend()
                                await hub.receive(text, from: id)
                                if lent { try await ClientConnection.writeLent(frames, to: outbound) }
                            }
                        case .binary:
                            await hub.rejectBinary(id)
                        }
                    }
                    throw Ended()
                }
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
