import BridgePairing
import Foundation
import HummingbirdWebSocket
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

    /// The upgraded connection of `context`: the connection to run, its channel (registered at accept by
    /// ``BridgeChildChannel``, for the hub's frames to go straight into) and the peer's address; `nil` (logged) if the
    /// channel is missing. It also releases the context's WebSocket handler reference (``WebSocketHandlerSlot``).
    ///
    /// Synchronous on purpose: the request context is large, and a local of the async upgrade handler would stay in
    /// its frame, in the connection's task, for as long as the connection is open.
    static func accept(
        _ context: WebSocketRouterContext<BridgeWebSocketRequestContext>, hub: BridgeHub,
        configuration: BridgeServerConfiguration, logger: Logger
    ) -> (connection: ClientConnection, channel: any Channel, remote: String?)? {
        let request = context.requestContext
        request.releaseHandlerReference()  // breaks hummingbird-websocket's context cycle (WebSocketHandlerSlot)
        let remote = request.remoteAddress?.ipAddress
        guard let channel = ChannelFrameWriter.channels.take(request.channelID) else {
            logger.error("WebSocket without its channel; closing it", metadata: ["remote": "\(remote ?? "?")"])
            return nil
        }
        return (ClientConnection(hub: hub, configuration: configuration, device: request.upgradeOutcome.device), channel, remote)
    }

    /// Messages up to this size are read and answered with an error if over ``BridgeServerConfiguration/maxFrameSize``;
    /// beyond it the connection is closed with 1009.
    static func readLimit(for maxFrameSize: Int) -> Int {
        max(maxFrameSize * 2, maxFrameSize + 64 * 1024)
    }

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
    /// What the hub queues for it is written straight into the channel (``OutboundQueue``); this task reads. A close
    /// the hub queues is sent through `outbound` by a task started only then (``ConnectionCloser``): an idle
    /// connection keeps no task of its own besides this one.
    func run(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter, channel: any Channel, remote: String?) async throws {
        let (id, frames) = await hub.connect(remote: remote, device: device)
        let closer = ConnectionCloser(WebSocketCloseTarget(outbound: outbound, channel: channel))
        defer { closer.end() }
        frames.attach(ChannelFrameWriter(channel: channel), onClose: closer.send)
        // The access token's expiry (a paired device only) is watched by the hub's connection sweep.
        if let expiresAt = device?.accessTokenExpiresAt { hub.tokenExpiresAt(expiresAt) }
        let initializeDeadline = ClientConnection.watchInitialize(id, hub: hub, on: channel.eventLoop, after: initializeTimeout)
        defer { initializeDeadline.cancel() }
        if let period = pingInterval { WebSocketKeepalive.install(on: channel, period: period) }
        // The reader ends when the peer closes (or answers the bridge's close), or the channel closes (a cut-off,
        // the close timeout, a ping timeout).
        do {
            try await read(inbound, from: id)
        } catch is CancellationError {
        } catch {
            await hub.disconnect(id)
            throw error
        }
        await hub.disconnect(id)
    }

    /// Reads the connection's messages into the hub until the peer or the channel ends them.
    private func read(_ inbound: WebSocketInboundStream, from id: ConnectionID) async throws {
        let maxFrameSize = self.maxFrameSize
        let limit = ClientConnection.readLimit(for: maxFrameSize)
        for try await message in inbound.messages(maxSize: limit) {
            switch message {
            case .text(let text):
                let size = text.utf8.count
                if size > maxFrameSize {
                    await hub.rejectOversized(id, size: size)
                } else {
                    await hub.receive(text, from: id)
                }
            case .binary:
                await hub.rejectBinary(id)
            }
        }
    }
}

/// What a ``ConnectionCloser`` closes: a WebSocket connection (``WebSocketCloseTarget``), or a test's stand-in.
protocol ConnectionCloseTarget: Sendable {
    /// Where the close timeout runs.
    var eventLoop: any EventLoop { get }
    /// Sends the close frame (the WebSocket handler then expects the peer's answer).
    func sendClose(_ kind: OutboundFrame.CloseKind, _ reason: String) async throws
    /// Closes the connection at once.
    func closeConnection()
}

/// A WebSocket connection as a ``ConnectionCloseTarget``: the close goes through its WebSocket handler's writer, the
/// timeout closes its channel.
struct WebSocketCloseTarget: ConnectionCloseTarget {
    let outbound: WebSocketOutboundWriter
    let channel: any Channel

    var eventLoop: any EventLoop { channel.eventLoop }

    func sendClose(_ kind: OutboundFrame.CloseKind, _ reason: String) async throws {
        try await outbound.close(kind.code, reason: String(reason.utf8.prefix(120)) ?? "closing")
    }

    func closeConnection() {
        channel.close(promise: nil)
    }
}

/// Sends the close frame the hub queued for a connection (``OutboundQueue/attach(_:onClose:)``), from a task started
/// only when there is a close to send, and closes the connection if the peer has not answered within
/// ``ClientConnection/closeTimeout`` of the close going out (a timer on the connection's event loop). ``end()`` (the
/// connection ended) stops a close still under way and its timer. Generic over its target so that the target is
/// stored inline (one allocation per connection).
final class ConnectionCloser<Target: ConnectionCloseTarget>: Sendable {
    private struct State {
        var task: Task<Void, Never>?
        var timeout: Scheduled<Void>?
        var ended = false
    }

    private let target: Target
    private let closeTimeout: Duration
    private let state = Mutex(State())

    /// A closer of `target` that waits `closeTimeout` for the peer's answer.
    init(_ target: Target, closeTimeout: Duration = ClientConnection.closeTimeout) {
        self.target = target
        self.closeTimeout = closeTimeout
    }

    /// Starts sending the close (once; not after ``end()``).
    func send(_ kind: OutboundFrame.CloseKind, _ reason: String) {
        state.withLock { state in
            guard !state.ended, state.task == nil else { return }
            state.task = Task { await self.close(kind, reason) }
        }
    }

    private func close(_ kind: OutboundFrame.CloseKind, _ reason: String) async {
        do {
            try await target.sendClose(kind, reason)
        } catch {
            // Not written (the connection is going, or was cancelled): close it now.
            if !Task.isCancelled { target.closeConnection() }
            return
        }
        // The reader ends when the peer answers; a peer that does not is closed.
        let target = self.target
        let timeout = target.eventLoop.scheduleTask(in: TimeAmount(closeTimeout)) { target.closeConnection() }
        let ended = state.withLock { state in
            if !state.ended { state.timeout = timeout }
            return state.ended
        }
        if ended { timeout.cancel() }
    }

    /// Whether a close went out and its timer waits for the peer's answer.
    var waitsForAnswer: Bool {
        state.withLock { $0.timeout != nil }
    }

    /// The connection ended: a close under way (being sent, or waiting for the peer's answer) is stopped.
    func end() {
        let (task, timeout) = state.withLock { state in
            state.ended = true
            defer {
                state.task = nil
                state.timeout = nil
            }
            return (state.task, state.timeout)
        }
        task?.cancel()
        timeout?.cancel()
    }
}

/// A connection's log handler: the bridge's own handler, with the connection's metadata (`connection`, `remote`,
/// `device`) added to each line as it is written, instead of a copy of the handler holding a metadata dictionary of
/// its own (issue 14 goal 4: that copy and its dictionary were ~0.5 KB per idle connection). As when they were set on
/// the handler, the connection's keys win over the bridge handler's, and metadata given at the call site over both.
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
